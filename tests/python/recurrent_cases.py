"""The test table of the recurrent layers (frontend/lowerings/recurrent.cpp):
nn.LSTM, nn.GRU and nn.RNN (tanh and relu), one or two layers, one or two
directions, batch_first both ways, with and without initial states and
biases, LSTM with proj_size, unbatched sequences. test_ops.py runs each case
forward, test_gradients.py backward (into the input and every weight) and
test_nonfinite.py with NaN/Inf, against eager PyTorch."""

import torch
import torch.nn as nn


class Recurrent(nn.Module):
    """The layer's output and final states concatenated into one tensor."""

    def __init__(self, layer, initial):
        super().__init__()
        self.layer = layer
        self.initial = initial

    def forward(self, x, *states):
        if self.initial:
            state = tuple(states) if isinstance(self.layer, nn.LSTM) else states[0]
            out, final = self.layer(x, state)
        else:
            out, final = self.layer(x)
        finals = final if isinstance(final, tuple) else (final,)
        return torch.cat([out.flatten()] + [f.flatten() for f in finals])


def _recurrent(kind, **fixed):
    def case(rng):
        layers = rng.randint(1, 2)
        bidirectional = rng.random() < 0.5
        batch_first = rng.random() < 0.5
        unbatched = rng.random() < 0.2
        hidden = rng.randint(2 if "proj_size" in fixed else 1, 4)
        options = dict(num_layers=layers, bidirectional=bidirectional, batch_first=batch_first,
                       bias=rng.random() < 0.8)
        options.update(fixed)
        if kind == "rnn_relu":
            layer = nn.RNN(3, hidden, nonlinearity="relu", **options)
        else:
            layer = {"lstm": nn.LSTM, "gru": nn.GRU, "rnn": nn.RNN}[kind](3, hidden, **options)
        steps, batch = rng.randint(1, 4), rng.randint(1, 3)
        shape = [steps, 3] if unbatched else ([batch, steps, 3] if batch_first else [steps, batch, 3])
        initial = rng.random() < 0.5
        inputs = [torch.randn(*shape)]
        if initial:
            out_size = options.get("proj_size", 0) or hidden
            directions = 2 if bidirectional else 1
            lead = [layers * directions] + ([] if unbatched else [batch])
            inputs.append(torch.randn(*lead, out_size))
            if kind == "lstm":
                inputs.append(torch.randn(*lead, hidden))
        return Recurrent(layer, initial), inputs
    return case


RECURRENT = {
    "lstm": _recurrent("lstm"),
    "lstm_proj": _recurrent("lstm", proj_size=1),
    "gru": _recurrent("gru"),
    "rnn_tanh": _recurrent("rnn"),
    "rnn_relu": _recurrent("rnn_relu"),
}
