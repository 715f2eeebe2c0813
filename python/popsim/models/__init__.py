"""Reference models for sizing jobs (popsim.sizeJob, benchmarks/fidelity.py):
torchvision's ResNet-50 and ViT-B/16, and BERT Base and Large in plain
PyTorch with the pretraining and SQuAD heads, split into pipeline blocks the
way Graphcore's public examples split them (``layers_per_ipu``).

Imported on demand (``import popsim.models``): torchvision loads only then.
"""

from popsim.models.bert import (BertConfig, BertEncoder, BertPretraining, BertSquad,
                                PackedBertPretraining, packed_pretraining_batch,
                                pretraining_batch, squad_batch)
from popsim.models.vision import ResNet50Training, ViTTraining, image_batch

__all__ = ["BertConfig", "BertEncoder", "BertPretraining", "BertSquad", "PackedBertPretraining",
           "packed_pretraining_batch", "pretraining_batch", "squad_batch", "ResNet50Training", "ViTTraining", "image_batch"]
