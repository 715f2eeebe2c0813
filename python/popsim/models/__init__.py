"""Reference models for sizing jobs (popsim.sizeJob, benchmarks/fidelity.py):
torchvision's ResNet-50, ViT-B/16 and EfficientNet-B4 (Graphcore's G16 variant), and BERT Base and Large in plain
PyTorch with the pretraining and SQuAD heads, split into pipeline blocks the
way Graphcore's public examples split them (``layers_per_ipu``).

Imported on demand (``import popsim.models``): torchvision loads only then.
"""

from popsim.models.bert import (BertConfig, BertEncoder, BertPretraining, BertSquad,
                                PackedBertPretraining, packed_pretraining_batch,
                                pretraining_batch, squad_batch)
from popsim.models.vision import (EfficientNetG16Training, ResNet50Training, ViTTraining,
                                  image_batch)

__all__ = ["BertConfig", "BertEncoder", "BertPretraining", "BertSquad", "PackedBertPretraining",
           "packed_pretraining_batch", "pretraining_batch", "squad_batch", "EfficientNetG16Training", "ResNet50Training", "ViTTraining",
           "image_batch"]
