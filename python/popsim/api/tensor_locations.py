"""``popsim.TensorLocationSettings``: where a kind of tensor lives, as PopTorch's
``opts.TensorLocations`` setters take it.

On chip, a tensor takes IPU memory for the whole program. Off chip, it lives in
Streaming Memory (the DRAM beside the IPUs) and is streamed in around its use,
which frees IPU memory and costs transfer time on the simulated clock.
"""

import numbers
from typing import Dict

from popsim.api.errors import OptionError


def _non_negative(setter: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise OptionError(f"TensorLocationSettings.{setter} expects a non-negative integer, "
                          f"got {value!r}.", option=f"TensorLocationSettings.{setter}")
    return int(value)


def _bool(setter: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise OptionError(f"TensorLocationSettings.{setter} expects a bool, got {value!r}.",
                          option=f"TensorLocationSettings.{setter}")
    return value


class TensorLocationSettings:
    """Where one kind of tensor lives, for the ``opts.TensorLocations`` setters.

    A new object keeps the tensors on chip, unsharded, without IO tiles. Its setters return
    it, so calls chain::

        opts.TensorLocations.setWeightLocation(
            popsim.TensorLocationSettings().useOnChipStorage(False).minElementsForOffChip(1024))

    The setters of ``opts.TensorLocations`` copy the settings, so changing them
    afterwards does not change the options.
    """

    def __init__(self) -> None:
        self.on_chip = True
        self.min_elements_for_off_chip = 0
        self.replicated_tensor_sharding = False
        self.min_elements_for_sharding = 0
        self.io_tiles_to_load = False
        self.io_tiles_to_store = False

    def useOnChipStorage(self, use: bool = True) -> "TensorLocationSettings":
        """Sets whether the tensors live on chip or in Streaming Memory.

        Args:
            use: True (the default, as for new settings) keeps them in IPU memory; False keeps
                them off chip, in Streaming Memory, streamed in around each use.

        Returns:
            These settings (``self``), so calls chain.

        Raises:
            OptionError: if ``use`` is not a bool.
        """
        self.on_chip = _bool("useOnChipStorage", use)
        return self

    def minElementsForOffChip(self, min_elements: int) -> "TensorLocationSettings":
        """Sets the size below which tensors stay on chip even when the settings put them off chip.

        Small tensors cost more to stream than they save.

        Args:
            min_elements: Tensors with fewer elements stay on chip (default 0: every tensor goes
                off chip).

        Returns:
            These settings (``self``), so calls chain.

        Raises:
            OptionError: if ``min_elements`` is not a non-negative integer.
        """
        self.min_elements_for_off_chip = _non_negative("minElementsForOffChip", min_elements)
        return self

    def useReplicatedTensorSharding(self, use: bool = True) -> "TensorLocationSettings":
        """Sets whether the tensors are sharded across the replicas of a replicated model.

        With sharding and ``replicationFactor`` > 1, each replica keeps 1/replicas of each
        floating-point tensor of at least ``minElementsForReplicatedTensorSharding`` elements.
        popsim shards the optimizer state (``setOptimizerLocation``) and the weights
        (``setWeightLocation``); compiling with sharding in the accumulator or activation
        location raises :class:`popsim.OptionError`.

        Args:
            use: True (the default of this call) to shard; False (the default of new settings)
                to keep a whole copy on every replica.

        Returns:
            These settings (``self``), so calls chain.

        Raises:
            OptionError: if ``use`` is not a bool.
        """
        self.replicated_tensor_sharding = _bool("useReplicatedTensorSharding", use)
        return self

    def minElementsForReplicatedTensorSharding(self, min_elements: int
                                               ) -> "TensorLocationSettings":
        """Sets the size below which tensors are not sharded across replicas.

        Their collectives would cost more than the memory they save.

        Args:
            min_elements: Tensors with fewer elements are not sharded (default 0: every
                floating-point tensor is).

        Returns:
            These settings (``self``), so calls chain.

        Raises:
            OptionError: if ``min_elements`` is not a non-negative integer.
        """
        self.min_elements_for_sharding = _non_negative("minElementsForReplicatedTensorSharding",
                                                       min_elements)
        return self

    def useIOTilesToLoad(self, use: bool = True) -> "TensorLocationSettings":
        """Sets whether off-chip tensors stream in through the IPU's IO tiles.

        With IO tiles (``Options.TensorLocations.numIOTiles``), the tensors stream in from
        Streaming Memory beside the work before the op that reads them, so the compute tiles
        only copy them over from the IO tiles. Compiling with this on for off-chip tensors and
        no IO tiles set aside raises :class:`popsim.OptionError`.

        Args:
            use: True (the default of this call) to load through the IO tiles; False (the default
                of new settings) to load on the compute tiles.

        Returns:
            These settings (``self``), so calls chain.

        Raises:
            OptionError: if ``use`` is not a bool.
        """
        self.io_tiles_to_load = _bool("useIOTilesToLoad", use)
        return self

    def useIOTilesToStore(self, use: bool = True) -> "TensorLocationSettings":
        """Sets whether off-chip tensors stream out through the IPU's IO tiles.

        The compute tiles copy the tensors to the IO tiles (``Options.TensorLocations.numIOTiles``)
        and go on while they leave for Streaming Memory. Compiling with this on for off-chip
        tensors and no IO tiles set aside raises :class:`popsim.OptionError`.

        Args:
            use: True (the default of this call) to store through the IO tiles; False (the
                default of new settings) to store from the compute tiles.

        Returns:
            These settings (``self``), so calls chain.

        Raises:
            OptionError: if ``use`` is not a bool.
        """
        self.io_tiles_to_store = _bool("useIOTilesToStore", use)
        return self

    def toDict(self) -> Dict[str, int]:
        """These settings under PopTorch's keys (``onChip``, ``minElementsForOffChip``,
        ``useReplicatedTensorSharding``, ``minElementsForReplicatedTensorSharding``,
        ``useIOTilesToLoad``, ``useIOTilesToStore``), switches as 0 or 1, as PopTorch's
        ``opts.TensorLocations.location_*`` dictionaries hold them.

        Returns:
            A new dictionary with every key, each at its value in effect (PopTorch's lists only
            the keys whose setters were called).
        """
        return {"onChip": int(self.on_chip),
                "minElementsForOffChip": self.min_elements_for_off_chip,
                "useReplicatedTensorSharding": int(self.replicated_tensor_sharding),
                "minElementsForReplicatedTensorSharding": self.min_elements_for_sharding,
                "useIOTilesToLoad": int(self.io_tiles_to_load),
                "useIOTilesToStore": int(self.io_tiles_to_store)}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TensorLocationSettings) and vars(self) == vars(other)

    def __repr__(self) -> str:
        text = f"TensorLocationSettings().useOnChipStorage({self.on_chip})"
        if self.min_elements_for_off_chip:
            text += f".minElementsForOffChip({self.min_elements_for_off_chip})"
        if self.replicated_tensor_sharding:
            text += ".useReplicatedTensorSharding(True)"
        if self.min_elements_for_sharding:
            text += f".minElementsForReplicatedTensorSharding({self.min_elements_for_sharding})"
        if self.io_tiles_to_load:
            text += ".useIOTilesToLoad(True)"
        if self.io_tiles_to_store:
            text += ".useIOTilesToStore(True)"
        return text
