"""Feeding the device: popsim.DataLoader and its asynchronous accessor."""
