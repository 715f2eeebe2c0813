"""Training: popsim.optim's optimizers, an optimizer bound to a compiled program (its
config, hyper-parameters and state), replica-grouped parameters, the registry of training
models, and the flow of weights and optimizer state between the device and the host."""
