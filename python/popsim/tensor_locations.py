"""``popsim.TensorLocationSettings``: where a kind of tensor lives, as PopTorch's
``opts.TensorLocations`` setters take it.

On chip, a tensor takes IPU memory for the whole program. Off chip, it lives in
Streaming Memory (the DRAM beside the IPUs) and is streamed in around its use,
which frees IPU memory and costs transfer time on the simulated clock.
"""

import numbers

from popsim.errors import OptionError


def _non_negative(setter: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise OptionError(f"TensorLocationSettings.{setter} expects a non-negative integer, "
                          f"got {value!r}.")
    return int(value)


def _bool(setter: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise OptionError(f"TensorLocationSettings.{setter} expects a bool, got {value!r}.")
    return value


class TensorLocationSettings:
    """Settings for one kind of tensor; setters chain."""

    def __init__(self) -> None:
        self.on_chip = True
        self.min_elements_for_off_chip = 0
        self.replicated_tensor_sharding = False
        self.min_elements_for_sharding = 0
        self.io_tiles_to_load = False
        self.io_tiles_to_store = False

    def useOnChipStorage(self, use: bool = True) -> "TensorLocationSettings":
        """False keeps the tensors in Streaming Memory, off chip."""
        self.on_chip = _bool("useOnChipStorage", use)
        return self

    def minElementsForOffChip(self, min_elements: int) -> "TensorLocationSettings":
        """Tensors with fewer elements stay on chip (small ones cost more to stream
        than they save)."""
        self.min_elements_for_off_chip = _non_negative("minElementsForOffChip", min_elements)
        return self

    def useReplicatedTensorSharding(self, use: bool = True) -> "TensorLocationSettings":
        """True shards the tensors across the replicas of a replicated model
        (replicationFactor > 1): each replica keeps 1/replicas of each. popsim
        shards the optimizer state (opts.TensorLocations.setOptimizerLocation)."""
        self.replicated_tensor_sharding = _bool("useReplicatedTensorSharding", use)
        return self

    def minElementsForReplicatedTensorSharding(self, min_elements: int
                                               ) -> "TensorLocationSettings":
        """Tensors with fewer elements are not sharded (their collectives cost
        more than the memory they save)."""
        self.min_elements_for_sharding = _non_negative("minElementsForReplicatedTensorSharding",
                                                       min_elements)
        return self

    def useIOTilesToLoad(self, use: bool = True) -> "TensorLocationSettings":
        """True streams the tensors in from Streaming Memory (off chip) through the IPU's
        IO tiles (Options.TensorLocations.numIOTiles): beside the work before the op
        that reads them, so the compute tiles only copy them over from the IO tiles."""
        self.io_tiles_to_load = _bool("useIOTilesToLoad", use)
        return self

    def useIOTilesToStore(self, use: bool = True) -> "TensorLocationSettings":
        """True streams the tensors out to Streaming Memory through the IO tiles: the
        compute tiles copy them there and go on while they leave."""
        self.io_tiles_to_store = _bool("useIOTilesToStore", use)
        return self

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
