"""From a user's model to a trace: the helpers called inside ``forward()`` (blocks, name
scopes, PopTorch's tensor ops, CPU ops, losses, multi-convolutions), the custom op library
their markers are, and the tracing itself (arguments' structure, float16 tracing on the
CPU, the model's named weights)."""
