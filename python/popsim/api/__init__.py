"""The PopTorch-shaped API users configure popsim with: options (which write the host
runtime's session options), their enums and groups, execution strategies, tensor
locations, errors, logging, and PopTorch's device and compile-hook helpers."""
