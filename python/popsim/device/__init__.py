"""A compiled program on its simulated device: the host runtime's device program for the
job's replicas (replication) and the processes of a distributed job (torch.distributed)."""
