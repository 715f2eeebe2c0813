"""BERT (Devlin et al., 2019) in plain PyTorch, for sizing jobs: the encoder,
the pretraining heads (masked language model with the decoder tied to the
word embeddings, and next-sentence prediction) and a SQuAD head (start and
end logits).

Pipeline blocks follow Graphcore's examples: ``layers_per_ipu`` says how many
encoder layers each IPU holds (``[0, 4, 4, 4]``: IPU 0 has only the
embeddings); the embeddings are on IPU 0, and the pretraining heads go back
to IPU 0, where the word embeddings they are tied to live. Each block is a
popsim.Block named after its IPU; with ``recompute_checkpoint_every_layer``
each layer's output is a recomputation checkpoint.
"""

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, ContextManager, List, Optional, Sequence, Tuple

import torch
import torch.nn.functional as F
from torch import nn

from popsim.api.enums import MatMulSerializationMode
from popsim.frontend.tensor_ops import recomputationCheckpoint, serializedMatMul
from popsim.models.pipeline_blocks import block_if_split


@dataclass
class BertConfig:
    """The architecture's sizes (BERT-Base by default) and its regularisation."""
    vocab_size: int = 30522
    hidden_size: int = 768
    num_layers: int = 12
    num_heads: int = 12
    intermediate_size: int = 3072
    max_positions: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    hidden_dropout: float = 0.1
    attention_dropout: float = 0.1

    @classmethod
    def base(cls, **overrides: Any) -> "BertConfig":
        return dataclasses.replace(cls(), **overrides)

    @classmethod
    def large(cls, **overrides: Any) -> "BertConfig":
        large = cls(hidden_size=1024, num_layers=24, num_heads=16, intermediate_size=4096)
        return dataclasses.replace(large, **overrides)


class BertEmbeddings(nn.Module):
    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.word = nn.Embedding(config.vocab_size, config.hidden_size)
        self.position = nn.Embedding(config.max_positions, config.hidden_size)
        self.token_type = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor,
                position_ids: Optional[torch.Tensor] = None) -> torch.Tensor:
        positions = (torch.arange(input_ids.shape[1], device=input_ids.device)
                     if position_ids is None else position_ids)
        hidden = self.word(input_ids) + self.position(positions) + self.token_type(token_type_ids)
        return self.dropout(self.norm(hidden))


class BertLayer(nn.Module):
    """Self-attention and the feed-forward network, each with a residual
    connection and a post layer norm."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        hidden = config.hidden_size
        self.heads = config.num_heads
        self.scale = 1.0 / math.sqrt(hidden // config.num_heads)
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.attention_out = nn.Linear(hidden, hidden)
        self.attention_norm = nn.LayerNorm(hidden, eps=config.layer_norm_eps)
        self.intermediate = nn.Linear(hidden, config.intermediate_size)
        self.output = nn.Linear(config.intermediate_size, hidden)
        self.output_norm = nn.LayerNorm(hidden, eps=config.layer_norm_eps)
        self.hidden_dropout = nn.Dropout(config.hidden_dropout)
        self.attention_dropout = nn.Dropout(config.attention_dropout)

    def forward(self, hidden: torch.Tensor, mask_bias: torch.Tensor) -> torch.Tensor:
        batch, length, width = hidden.shape
        head = width // self.heads
        qkv = self.qkv(hidden).reshape(batch, length, 3, self.heads, head).permute(2, 0, 3, 1, 4)
        query, key, value = qkv[0], qkv[1], qkv[2]
        scores = query @ key.transpose(-1, -2) * self.scale + mask_bias
        weights = self.attention_dropout(torch.softmax(scores, dim=-1))
        context = (weights @ value).transpose(1, 2).reshape(batch, length, width)
        hidden = self.attention_norm(hidden + self.hidden_dropout(self.attention_out(context)))
        feed = self.output(F.gelu(self.intermediate(hidden)))
        return self.output_norm(hidden + self.hidden_dropout(feed))


def _ipu_of_layers(layers_per_ipu: Sequence[int], num_layers: int) -> List[int]:
    if sum(layers_per_ipu) != num_layers or any(n < 0 for n in layers_per_ipu):
        raise ValueError(f"layers_per_ipu {list(layers_per_ipu)} must place each of the "
                         f"{num_layers} layers once (sum {sum(layers_per_ipu)}).")
    return [ipu for ipu, count in enumerate(layers_per_ipu) for _ in range(count)]


class BertEncoder(nn.Module):
    """Embeddings and layers, in blocks "IPU<n>" by ``layers_per_ipu`` (one
    block for everything without it)."""

    def __init__(self, config: BertConfig, layers_per_ipu: Optional[Sequence[int]] = None,
                 recompute_checkpoint_every_layer: bool = False) -> None:
        super().__init__()
        self.config = config
        self.embeddings = BertEmbeddings(config)
        self.layers = nn.ModuleList(BertLayer(config) for _ in range(config.num_layers))
        self.ipu_of_layer = (_ipu_of_layers(layers_per_ipu, config.num_layers)
                             if layers_per_ipu is not None else None)
        self.checkpoints = recompute_checkpoint_every_layer

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor,
                attention_mask: torch.Tensor, position_ids: Optional[torch.Tensor] = None,
                packed: bool = False) -> torch.Tensor:
        """``attention_mask`` is 1 where a token is attended and 0 where it is
        padding; ``packed``, it holds instead each token's sequence in its
        pack (1, 2, ...; 0 for padding), and a token attends to the tokens of
        its own sequence only."""
        with _block(self.ipu_of_layer, "IPU0", 0):
            hidden = self.embeddings(input_ids, token_type_ids, position_ids)
            # 0 where attended, a large negative number where masked out.
            if packed:
                same = (attention_mask[:, :, None] == attention_mask[:, None, :]).to(hidden.dtype)
                mask_bias = ((1.0 - same) * -1000.0)[:, None, :, :]
            else:
                mask_bias = ((1.0 - attention_mask.to(hidden.dtype)) * -1000.0)[:, None, None, :]
        for index, layer in enumerate(self.layers):
            ipu = self.ipu_of_layer[index] if self.ipu_of_layer is not None else 0
            with _block(self.ipu_of_layer, f"IPU{ipu}", ipu):
                hidden = layer(hidden, mask_bias)
                if self.checkpoints:
                    hidden = recomputationCheckpoint(hidden)
        return hidden


def _block(ipu_of_layer: Optional[List[int]], name: str, ipu: int) -> ContextManager[object]:
    """The block of `name` on `ipu` when the model is split (has an IPU per layer)."""
    return block_if_split(ipu_of_layer is not None, name, ipu)


class BertPretraining(nn.Module):
    """BERT with the pretraining heads and their loss: ``forward(input_ids,
    token_type_ids, attention_mask, masked_positions, masked_labels,
    next_sentence_label)`` returns the MLM plus NSP loss. The MLM head
    predicts only the ``masked_positions`` (Graphcore's examples gather the
    masked tokens first, 20 per sequence of 128); its decoder is tied to the
    word embeddings, on IPU 0 with them."""

    def __init__(self, config: BertConfig, layers_per_ipu: Optional[Sequence[int]] = None,
                 recompute_checkpoint_every_layer: bool = False,
                 embedding_serialization_factor: int = 1) -> None:
        super().__init__()
        self.bert = BertEncoder(config, layers_per_ipu, recompute_checkpoint_every_layer)
        if config.vocab_size % max(embedding_serialization_factor, 1):
            raise ValueError(f"embedding_serialization_factor {embedding_serialization_factor} "
                             f"must divide the vocabulary ({config.vocab_size}).")
        # The tied decoder's matmul in this many parts along the vocabulary, one
        # after the other (Graphcore's embedding_serialization_factor).
        self.serialization = embedding_serialization_factor
        hidden = config.hidden_size
        self.transform = nn.Linear(hidden, hidden)
        self.transform_norm = nn.LayerNorm(hidden, eps=config.layer_norm_eps)
        self.decoder_bias = nn.Parameter(torch.zeros(config.vocab_size))
        self.pooler = nn.Linear(hidden, hidden)
        self.next_sentence = nn.Linear(hidden, 2)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor,
                attention_mask: torch.Tensor, masked_positions: torch.Tensor,
                masked_labels: torch.Tensor, next_sentence_label: torch.Tensor
                ) -> torch.Tensor:
        hidden = self.bert(input_ids, token_type_ids, attention_mask)
        with _block(self.bert.ipu_of_layer, "heads", 0):
            pooled = torch.tanh(self.pooler(hidden[:, 0]))
            nsp = F.cross_entropy(self.next_sentence(pooled).float(), next_sentence_label)
            return self.masked_lm_loss(hidden, masked_positions, masked_labels) + nsp

    def masked_lm_loss(self, hidden: torch.Tensor, masked_positions: torch.Tensor,
                       masked_labels: torch.Tensor) -> torch.Tensor:
        """The MLM loss of the masked tokens (labels of -100 are unused slots)."""
        width = hidden.shape[-1]
        index = masked_positions[:, :, None].expand(-1, -1, width)
        masked = torch.gather(hidden, 1, index)
        transformed = self.transform_norm(F.gelu(self.transform(masked)))
        decoder = self.bert.embeddings.word.weight.t()
        if self.serialization > 1:
            logits = serializedMatMul(transformed, decoder, MatMulSerializationMode.OutputChannels,
                                      self.serialization)
        else:
            logits = transformed @ decoder
        logits = logits + self.decoder_bias
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(),
                               masked_labels.reshape(-1), ignore_index=-100)


class PackedBertPretraining(BertPretraining):
    """BertPretraining on packed sequences, as Graphcore's examples pack them
    (Krell et al., 2021): each row of the batch holds up to
    ``max_sequences_per_pack`` sequences, each attending only to itself, with
    positions restarting per sequence, the masked tokens of all of them, and
    their [CLS] tokens in the row's last ``max_sequences_per_pack`` positions,
    from which the NSP head predicts one label per sequence.
    ``forward(input_ids, token_type_ids, position_ids, sequence_ids,
    masked_positions, masked_labels, next_sentence_labels)``: sequence_ids
    number each token's sequence (1, 2, ...; 0 for padding); labels of -100
    are unused slots (fewer masked tokens, or sequences, than the row has
    room for). Returns the MLM plus NSP loss."""

    def __init__(self, config: BertConfig, layers_per_ipu: Optional[Sequence[int]] = None,
                 recompute_checkpoint_every_layer: bool = False,
                 embedding_serialization_factor: int = 1, max_sequences_per_pack: int = 3
                 ) -> None:
        super().__init__(config, layers_per_ipu, recompute_checkpoint_every_layer,
                         embedding_serialization_factor)
        self.max_sequences_per_pack = max_sequences_per_pack

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor,  # type: ignore[override]
                position_ids: torch.Tensor, sequence_ids: torch.Tensor,
                masked_positions: torch.Tensor, masked_labels: torch.Tensor,
                next_sentence_labels: torch.Tensor) -> torch.Tensor:
        hidden = self.bert(input_ids, token_type_ids, sequence_ids, position_ids, packed=True)
        with _block(self.bert.ipu_of_layer, "heads", 0):
            cls = hidden[:, -self.max_sequences_per_pack:]
            pooled = torch.tanh(self.pooler(cls))
            nsp = F.cross_entropy(self.next_sentence(pooled).reshape(-1, 2).float(),
                                  next_sentence_labels.reshape(-1), ignore_index=-100)
            return self.masked_lm_loss(hidden, masked_positions, masked_labels) + nsp


class BertSquad(nn.Module):
    """BERT with a SQuAD head: ``forward(input_ids, token_type_ids,
    attention_mask, start_positions, end_positions)`` returns the mean of the
    start and end cross entropies over the sequence. The head sits with the
    last layer."""

    def __init__(self, config: BertConfig, layers_per_ipu: Optional[Sequence[int]] = None,
                 recompute_checkpoint_every_layer: bool = False) -> None:
        super().__init__()
        self.bert = BertEncoder(config, layers_per_ipu, recompute_checkpoint_every_layer)
        self.span = nn.Linear(config.hidden_size, 2)

    def logits(self, hidden: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        start, end = self.span(hidden).float().unbind(-1)
        return start, end

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor,
                attention_mask: torch.Tensor, start_positions: torch.Tensor,
                end_positions: torch.Tensor) -> torch.Tensor:
        hidden = self.bert(input_ids, token_type_ids, attention_mask)
        last = self.bert.ipu_of_layer[-1] if self.bert.ipu_of_layer else 0
        with _block(self.bert.ipu_of_layer, "squad", last):
            start, end = self.logits(hidden)
            return (F.cross_entropy(start, start_positions)
                    + F.cross_entropy(end, end_positions)) / 2


def pretraining_batch(config: BertConfig, batch: int, sequence: int = 128, masked: int = 20,
                      seed: int = 0) -> Tuple[torch.Tensor, ...]:
    """A random pretraining micro-batch of `batch` sequences (BertPretraining's inputs)."""
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, config.vocab_size, (batch, sequence), generator=generator)
    types = torch.randint(0, config.type_vocab_size, (batch, sequence), generator=generator)
    mask = torch.ones(batch, sequence, dtype=torch.long)
    positions = torch.stack([torch.randperm(sequence, generator=generator)[:masked]
                             for _ in range(batch)])
    labels = torch.randint(0, config.vocab_size, (batch, masked), generator=generator)
    next_sentence = torch.randint(0, 2, (batch,), generator=generator)
    return ids, types, mask, positions, labels, next_sentence


def packed_pretraining_batch(config: BertConfig, batch: int, sequence: int = 128,
                             masked: int = 22, max_sequences_per_pack: int = 3,
                             seed: int = 0) -> Tuple[torch.Tensor, ...]:
    """A random micro-batch of `batch` packs (PackedBertPretraining's inputs):
    each row holds 1 to max_sequences_per_pack sequences that fill its first
    sequence - max_sequences_per_pack tokens, then their [CLS] tokens, with
    `masked` masked tokens over them."""
    generator = torch.Generator().manual_seed(seed)
    slots, body = max_sequences_per_pack, sequence - max_sequences_per_pack
    ids = torch.randint(0, config.vocab_size, (batch, sequence), generator=generator)
    types = torch.randint(0, config.type_vocab_size, (batch, sequence), generator=generator)
    positions = torch.zeros(batch, sequence, dtype=torch.long)
    sequences = torch.zeros(batch, sequence, dtype=torch.long)
    next_sentence = torch.full((batch, slots), -100, dtype=torch.long)
    for row in range(batch):
        count = int(torch.randint(1, slots + 1, (), generator=generator))
        cuts = sorted(torch.randperm(body - 1, generator=generator)[:count - 1].add(1).tolist())
        for number, (start, end) in enumerate(zip([0] + cuts, cuts + [body]), start=1):
            sequences[row, start:end] = number
            positions[row, start:end] = torch.arange(end - start)
            sequences[row, body + number - 1] = number  # its [CLS]
        next_sentence[row, :count] = torch.randint(0, 2, (count,), generator=generator)
    masked_positions = torch.stack([torch.randperm(body, generator=generator)[:masked]
                                    for _ in range(batch)])
    labels = torch.randint(0, config.vocab_size, (batch, masked), generator=generator)
    return ids, types, positions, sequences, masked_positions, labels, next_sentence


def squad_batch(config: BertConfig, batch: int, sequence: int = 384,
                seed: int = 0) -> Tuple[torch.Tensor, ...]:
    """A random SQuAD micro-batch (BertSquad's inputs)."""
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, config.vocab_size, (batch, sequence), generator=generator)
    types = torch.randint(0, config.type_vocab_size, (batch, sequence), generator=generator)
    mask = torch.ones(batch, sequence, dtype=torch.long)
    start = torch.randint(0, sequence, (batch,), generator=generator)
    end = torch.randint(0, sequence, (batch,), generator=generator)
    return ids, types, mask, start, end
