"""Views, in-place ops, clone, detach and no_grad: popsim gives eager PyTorch's numbers.

popsim's IR has value semantics; csrc/frontend/aliasing.cpp replays eager
aliasing on it. Each case runs eagerly and on popsim from the same inputs and
compares the outputs and the inputs afterwards (eager modifies them in place,
and so must popsim). Training cases compare the weights after SGD steps.
"""

import copy

import pytest
import torch

import popsim
from models import Function
from popsim.compile.gradients import gradients


def run_both(function, *inputs, options=None):
    """Eager and popsim outputs and inputs after the call, as lists."""
    eager_inputs = [x.clone() for x in inputs]
    popsim_inputs = [x.clone() for x in inputs]
    eager = function(*eager_inputs)
    model = popsim.inferenceModel(Function(function), options)
    ours = model(*popsim_inputs)
    model.destroy()
    if isinstance(eager, torch.Tensor):
        eager, ours = [eager], [ours]
    return list(eager) + eager_inputs, list(ours) + popsim_inputs


def assert_same(eager, ours):
    assert len(eager) == len(ours)
    for i, (expected, actual) in enumerate(zip(eager, ours)):
        assert actual.shape == expected.shape, i
        torch.testing.assert_close(actual, expected, rtol=1e-6, atol=1e-6, msg=f"value {i}")


def issue_case(x, y, z):
    x += y
    x_clone = x.clone()
    x += y
    x_clone += z
    return x, x_clone


def setitem_number(x):
    y = x * 1
    y[:, 0] = 0
    return y


def setitem_stepped_slice(x):
    y = x * 1
    y[:, ::2] = -1.5
    return y


def mul_through_slice(x):
    y = x * 1
    y[:, 1:].mul_(3)
    return y


def add_through_flat_view(x):
    y = x * 1
    y.view(-1).add_(1)
    return y


def old_value_kept(x):
    y = x * 1
    before = y + 0
    y.add_(1)
    return before, y


def transposed_view_sees_later_write(x):
    y = x * 1
    view = y.t()
    y.add_(1)
    return view * 2


def row_added_to_row(x):
    y = x * 1
    y[0] += y[1]
    return y


def chunk_written(x):
    y = x * 1
    first, second = y.chunk(2, dim=1)
    second.sub_(first)
    return y, first, second


def nested_views_written(x):
    y = x * 1
    y[1:][:, ::2].mul_(-2)
    return y


def permuted_then_written(x):
    y = x.reshape(2, 3, 4) * 1
    y.permute(2, 0, 1)[1].add_(10)
    return y


def unsqueezed_then_written(x):
    y = x * 1
    y.unsqueeze(0)[0, 2].fill_(7)
    return y


def copy_into_slice(x):
    y = torch.zeros_like(x)
    y[1:3].copy_(x[:2] * 2)
    return y


def fill_with_tensor(x):
    y = x * 1
    y[0].fill_(x[2, 1])
    return y


def expanded_view_sees_write(x):
    y = x * 1
    expanded = y[:, :1].expand(-1, 4)
    y.mul_(2)
    return expanded + 0


def clone_is_independent(x):
    y = x * 1
    copy_ = y.clone()
    copy_.add_(1)
    y.mul_(3)
    return y, copy_


def detached_view_writes_base(x):
    y = x * 1
    y.detach().add_(5)
    return y


def written_view_of_written_base(x):
    y = x * 1
    row = y[1]
    y.add_(1)
    row.mul_(2)
    y.sub_(0.5)
    return row, y


def input_multiplied(x):
    x.mul_(2)
    return x + 1


def input_row_set(x):
    x[:, 0] = 5
    return x * 2


def input_written_through_view(x):
    x.view(-1)[:3].add_(100)
    return x.sum(dim=1)


def input_read_before_and_after(x):
    before = x * 1
    x.add_(1)
    return before, x


def zeros_written_with_runtime_values(x):
    """A table built from constants and filled from the input (positional encodings)."""
    table = torch.zeros(6, 4)
    table[:, 0::2] = torch.tanh(x[:, 1:3])
    return x + table


def constant_view_taken_before_the_write(x):
    table = torch.ones(6, 4)
    column = table[:, 1]
    before = table * 1
    table[:, 1] = x[:, 0]
    table[:, 2].fill_(5)
    return column * 3, table, before


def constant_written_in_place_by_runtime_operand(x):
    table = torch.arange(24.0).reshape(6, 4)
    table.mul_(x)
    return table.t()


def constant_changed_at_compile_time_after_a_use(x):
    offset = torch.zeros(4)
    first = x + offset
    offset += 1
    return first, x + offset


def to_with_copy_is_independent(x):
    y = x * 1
    z = y.to(torch.float32, copy=True)
    z[0] = 7
    return y, z


def to_another_memory_format_is_a_copy(x):
    y = x.reshape(1, 4, 3, 2) * 1
    z = y.contiguous(memory_format=torch.channels_last)
    z[:, 0] = -1
    w = y.to(memory_format=torch.channels_last)
    w[:, 1] = -2
    return y, z, w


def copy_converts_the_dtype(x):
    y = x * 1
    y[:, :2].copy_((x[:, 2:] * 4).int())
    return y


def views_of_positive_ravel_and_hsplit_are_written(x):
    # positive, ravel of a contiguous tensor and hsplit's pieces are views;
    # ravel of a transposed tensor is a copy.
    y = x * 1
    torch.positive(y).add_(1)
    y.ravel().mul_(2)
    torch.hsplit(y, 2)[1].sub_(5)
    y.t().ravel().add_(100)
    return y


def layout_changed_in_place_then_written(x):
    # unsqueeze_, t_, transpose_, squeeze_ and swapaxes_ change only the
    # tensor's layout: it stays a view of its memory, which later writes
    # through it (and through views taken before) reach.
    y = x * 1
    rows = y[1:3]
    flat = y.view(-1)
    y.unsqueeze_(0)
    y[0, 0].mul_(2)
    y.squeeze_(0)
    y.t_()
    y[0].add_(10)
    rows.transpose_(0, 1)
    rows[1:].sub_(3)
    y.swapaxes_(0, 1)
    flat[::5].mul_(-1)
    return y, rows, flat, y.sum(0)


def constant_reshaped_in_place_then_written(x):
    # Tables built from constants, reshaped in place, then written with
    # runtime values: the view taken before the change keeps its layout.
    pe = torch.zeros(4, 6)
    before = pe[1:3]
    pe.unsqueeze_(0)
    pe[0, :, 0::2] = x[:4, :3]
    m = torch.triu(torch.ones(4, 4))
    m.t_()
    m.mul_(x[:4])
    return pe, before, m


def layout_kept_where_nothing_changes(x):
    # transpose_ of a dim with itself and squeeze_ without dims of size 1
    # change nothing, even on an input; views of an input may change their
    # layout.
    x.transpose_(1, 1)
    x.squeeze_()
    row = x[1]
    row.unsqueeze_(0)
    return x * 2, row + 1


def triangle_and_diagonal_filled_in_place(x):
    # tril_, triu_ and fill_diagonal_ (with and without wrap) through views.
    y = x * 1
    y[:4].tril_(-1)
    y[2:].triu_(1)
    z = x * 2
    z.fill_diagonal_(-7.5)
    w = (x * 3).t()[:, :4]
    w.fill_diagonal_(0.25, wrap=True)
    v = x.repeat(2, 1)
    v.fill_diagonal_(4, wrap=True)
    return y, z, w, v, v.t().contiguous().fill_diagonal_(1, wrap=True)


CASES = [layout_changed_in_place_then_written, constant_reshaped_in_place_then_written,
         layout_kept_where_nothing_changes, triangle_and_diagonal_filled_in_place,
         views_of_positive_ravel_and_hsplit_are_written, setitem_number, setitem_stepped_slice, mul_through_slice, add_through_flat_view,
         old_value_kept, transposed_view_sees_later_write, row_added_to_row, chunk_written,
         nested_views_written, unsqueezed_then_written, copy_into_slice, fill_with_tensor,
         expanded_view_sees_write, clone_is_independent, detached_view_writes_base,
         written_view_of_written_base, input_multiplied, input_row_set,
         input_written_through_view, input_read_before_and_after,
         zeros_written_with_runtime_values, constant_view_taken_before_the_write,
         constant_written_in_place_by_runtime_operand,
         constant_changed_at_compile_time_after_a_use, to_with_copy_is_independent,
         to_another_memory_format_is_a_copy, copy_converts_the_dtype]


def test_the_issue_case_matches_eager_outputs_and_inputs():
    torch.manual_seed(0)
    x, y, z = torch.randn(3, 4), torch.randn(3, 4), torch.randn(3, 4)
    assert_same(*run_both(issue_case, x, y, z))


@pytest.mark.parametrize("function", CASES, ids=lambda f: f.__name__)
def test_views_and_in_place_ops_match_eager(function):
    torch.manual_seed(1)
    assert_same(*run_both(function, torch.randn(6, 4)))


def test_permuted_view_of_a_reshaped_intermediate():
    torch.manual_seed(2)
    assert_same(*run_both(permuted_then_written, torch.randn(6, 4)))


def test_reshape_of_a_transposed_tensor_is_a_copy():
    # reshape() copies a non-contiguous tensor, so writing the result leaves x alone.
    def function(x):
        y = x * 1
        flat = y.t().reshape(-1)
        flat.add_(1)
        return y, flat

    torch.manual_seed(3)
    assert_same(*run_both(function, torch.randn(6, 4)))


def test_reshape_of_a_contiguous_tensor_is_a_view():
    def function(x):
        y = x * 1
        y.reshape(-1)[5:].zero_()
        return y

    torch.manual_seed(4)
    assert_same(*run_both(function, torch.randn(6, 4)))


def test_tracing_leaves_the_callers_inputs_alone_until_the_call():
    x = torch.ones(4, 2)
    model = popsim.inferenceModel(Function(input_multiplied))
    model.compile(x)
    assert torch.equal(x, torch.ones(4, 2))
    model(x)
    assert torch.equal(x, torch.full((4, 2), 2.0))


@pytest.mark.parametrize("mode", [popsim.OutputMode.All, popsim.OutputMode.Final,
                                  popsim.OutputMode.Sum])
def test_inputs_are_written_back_for_every_device_iteration(mode):
    torch.manual_seed(5)
    options = popsim.Options().deviceIterations(3).outputMode(mode)
    x = torch.randn(6, 4)
    eager_x = x.clone()
    eager_out = input_row_set(eager_x)
    model = popsim.inferenceModel(Function(input_row_set), options)
    out = model(x)
    torch.testing.assert_close(x, eager_x, rtol=0, atol=0)
    if mode == popsim.OutputMode.All:
        torch.testing.assert_close(out, eager_out)
    elif mode == popsim.OutputMode.Final:
        torch.testing.assert_close(out, eager_out[4:])
    else:
        torch.testing.assert_close(out, eager_out.reshape(3, 2, 4).sum(0))


def sgd_step_both(model, batches, options=None, lr=0.1):
    """The model after SGD steps on popsim and eagerly (float32), as state dicts."""
    eager = copy.deepcopy(model)
    optimizer = torch.optim.SGD(eager.parameters(), lr=lr)
    for batch in batches:
        optimizer.zero_grad()
        _, loss = eager(*batch)
        loss.backward()
        optimizer.step()
    trainer = popsim.trainingModel(model, options, torch.optim.SGD(model.parameters(), lr=lr))
    for batch in batches:
        trainer(*batch)
    trainer.copyWeightsToHost()
    trainer.destroy()
    return model.state_dict(), eager.state_dict()


def assert_same_state(ours, eager):
    assert ours.keys() == eager.keys()
    for name in ours:
        torch.testing.assert_close(ours[name], eager[name], rtol=1e-5, atol=1e-6, msg=name)


class WritesIntoActivations(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.first = torch.nn.Linear(4, 6)
        self.second = torch.nn.Linear(4, 6)

    def forward(self, x, target):
        y = self.first(x)
        y[:, 0] = 0
        y[:, 1:4] *= 2
        z = y.clone()
        z[:, ::2] += self.second(x)[:, ::2]
        y.t()[5].sub_(z[:, 1])
        return y, torch.nn.functional.mse_loss(y + z, target)


class WritesIntoConstantTable(torch.nn.Module):
    """Layer outputs written into a table the model builds from constants."""

    def __init__(self):
        super().__init__()
        self.first = torch.nn.Linear(4, 3)

    def forward(self, x, target):
        table = torch.full((4, 6), 0.5)
        table[:, ::2] = self.first(x)
        table[:, 1].mul_(x[:, 0])
        return table, torch.nn.functional.mse_loss(table * table, target)


class LayoutChangedInPlace(torch.nn.Module):
    """Activations reshaped in place (unsqueeze_, t_, squeeze_), masked with
    tril_ and fill_diagonal_, and written through an older view."""

    def __init__(self):
        super().__init__()
        self.first = torch.nn.Linear(4, 6)

    def forward(self, x, target):
        y = self.first(x)
        rows = y[:2]
        y.unsqueeze_(0).squeeze_(0).t_()
        y.tril_(1)
        y[:4].fill_diagonal_(0.5)
        rows.mul_(3)
        return y, torch.nn.functional.mse_loss(y.t(), target)


class LayoutChangedUnderNoGrad(torch.nn.Module):
    """A layout change under torch.no_grad() keeps the tensor's history, as
    the tensor is the same one in eager PyTorch."""

    def __init__(self):
        super().__init__()
        self.first = torch.nn.Linear(4, 6)

    def forward(self, x, target):
        y = self.first(x)
        with torch.no_grad():
            y.unsqueeze_(0)
        return y, torch.nn.functional.mse_loss(y.squeeze(0), target)


@pytest.mark.parametrize("make_model", [WritesIntoActivations, WritesIntoConstantTable,
                                        LayoutChangedInPlace, LayoutChangedUnderNoGrad],
                         ids=lambda m: m.__name__)
def test_training_through_writes_into_views_matches_eager(make_model):
    torch.manual_seed(6)
    batches = [(torch.randn(4, 4), torch.randn(4, 6)) for _ in range(3)]
    assert_same_state(*sgd_step_both(make_model(), batches))


class Detached(torch.nn.Module):
    """The issue's model: the first layer's output is detached."""

    def __init__(self):
        super().__init__()
        self.first_layer = torch.nn.Linear(4, 4)
        self.second_layer = torch.nn.Linear(4, 4)

    def forward(self, x, target):
        out = self.first_layer(x).detach()
        out = self.second_layer(out)
        return out, torch.nn.functional.mse_loss(out, target)


class NoGradRegion(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.frozen = torch.nn.Linear(4, 4)
        self.trained = torch.nn.Linear(4, 4)
        self.head = torch.nn.Linear(4, 4)

    def forward(self, x, target):
        with torch.no_grad():
            h = self.frozen(x)
            with torch.enable_grad():
                h = self.trained(h)  # gradients flow again in here
            h = h * 2  # ...but not out of the no_grad region
        out = self.head(h) + self.trained(x)
        return out, torch.nn.functional.mse_loss(out, target)


class DetachedWeight(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 4)

    def forward(self, x, target):
        out = torch.nn.functional.linear(x, self.layer.weight.detach(), self.layer.bias)
        return out, torch.nn.functional.mse_loss(out, target)


@pytest.mark.parametrize("make_model", [Detached, NoGradRegion, DetachedWeight],
                         ids=lambda m: m.__name__)
def test_gradients_stop_where_eager_stops_them(make_model):
    torch.manual_seed(7)
    model = make_model()
    before = copy.deepcopy(model.state_dict())
    batches = [(torch.randn(4, 4), torch.randn(4, 4)) for _ in range(2)]
    ours, eager = sgd_step_both(model, batches)
    assert_same_state(ours, eager)
    if make_model is Detached:  # the issue's check, directly
        assert torch.equal(ours["first_layer.bias"], before["first_layer.bias"])


def test_gradients_stop_in_a_pipeline_too():
    class Blocked(Detached):
        def forward(self, x, target):
            with popsim.Block("B0", ipu_id=0):
                out = self.first_layer(x).detach()
            with popsim.Block("B1", ipu_id=1):
                out = self.second_layer(out)
                return out, torch.nn.functional.mse_loss(out, target)

    torch.manual_seed(8)
    options = popsim.Options()
    options.Training.gradientAccumulation(3)
    options.setExecutionStrategy(popsim.PipelinedExecution("B0", "B1"))
    batches = [(torch.randn(12, 4), torch.randn(12, 4)) for _ in range(2)]
    model = Blocked()
    eager = copy.deepcopy(model)
    optimizer = torch.optim.SGD(eager.parameters(), lr=0.1)
    for x, target in batches:  # popsim averages the gradients of 3 micro-batches of 4
        optimizer.zero_grad()
        for i in range(0, 12, 4):
            (eager(x[i:i + 4], target[i:i + 4])[1] / 3).backward()
        optimizer.step()
    trainer = popsim.trainingModel(model, options, torch.optim.SGD(model.parameters(), lr=0.1))
    for batch in batches:
        trainer(*batch)
    trainer.copyWeightsToHost()
    assert_same_state(model.state_dict(), eager.state_dict())


class CountsCalls(torch.nn.Module):
    """A buffer updated in place through a view keeps its value between calls."""

    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 4)
        self.register_buffer("counts", torch.zeros(3))

    def forward(self, x, target):
        self.counts[1:] += 1
        out = self.layer(x) * self.counts[2]
        return out, torch.nn.functional.mse_loss(out, target)


def test_buffers_written_through_views_persist_between_calls():
    torch.manual_seed(9)
    batches = [(torch.randn(4, 4), torch.randn(4, 4)) for _ in range(3)]
    ours, eager = sgd_step_both(CountsCalls(), batches, lr=0.01)
    assert torch.equal(eager["counts"], torch.tensor([0.0, 3.0, 3.0]))
    assert_same_state(ours, eager)


# Found by the differential fuzzer (test_fuzz.py).


def test_a_returned_view_of_a_tensor_written_in_a_later_pipeline_stage():
    class Staged(torch.nn.Module):
        def forward(self, x):
            with popsim.Block("B0", ipu_id=0):
                view = x[:, :2]
                y = x.exp()
            with popsim.Block("B1", ipu_id=1):
                x.add_(y)
                z = x * 2
                z[:, 1:].mul_(3)
            return view, z

    torch.manual_seed(10)
    options = popsim.Options().deviceIterations(2)
    options.setExecutionStrategy(popsim.PipelinedExecution("B0", "B1"))
    x = torch.randn(4, 3)
    eager_x = x.clone()
    eager = [torch.cat(parts) for parts in zip(*(Staged()(rows) for rows in eager_x.split(2)))]
    ours = popsim.inferenceModel(Staged(), options)(x)
    assert_same(eager + [eager_x], list(ours) + [x])


def test_an_in_place_op_reading_what_it_overwrites_is_refused():
    def shifted_sum(x):
        x[:, 1:] += x[:, :2]
        return x

    with pytest.raises(popsim.UnsupportedOperationError,
                       match=r"aten::add_ at .*test_aliasing.py:\d+ \(in shifted_sum\): an in-place "
                       r"aten::add_ that reads elements of the tensor it writes at other positions "
                       r"\(as x\[:, 1:\] \+= x\[:, :-1\] does\); eager PyTorch's result then "
                       r"depends on the order its kernel visits the elements. Read from a copy: "
                       r"x\[:, 1:\] \+= x\[:, :-1\].clone\(\)"):
        popsim.inferenceModel(Function(shifted_sum))(torch.ones(2, 3))
    # The same elements at the same positions, or a copy, are fine.
    assert_same(*run_both(lambda x: x.add_(x[:, :]), torch.ones(2, 3)))
    assert_same(*run_both(lambda x: x[:, 1:].add_(x[:, :2].clone()), torch.ones(2, 3)))


@pytest.mark.parametrize("make_model", [
    lambda: Function(lambda x: x.unsqueeze_(0) * 2),
    lambda: WeightTransposedInPlace()], ids=["input", "weight"])
def test_a_layout_change_of_an_input_or_weight_itself_is_refused(make_model):
    """Eager PyTorch leaves the caller's tensor (or the module's weight) with
    the new shape; popsim cannot, so it says so. Views of them may change
    their layout (layout_changed_in_place_then_written)."""
    model = make_model()
    is_input = isinstance(model, Function)
    op = "unsqueeze_" if is_input else "t_"
    name = r"model input args\[0\]" if is_input else r"weight or buffer \S*weight"
    with pytest.raises(popsim.UnsupportedOperationError,
                       match=rf"an in-place aten::{op} that changes the shape of {name} itself: "
                       r"eager PyTorch leaves the caller's tensor with the new shape after the "
                       rf"call, which popsim does not do; take a new view instead \(x = "
                       rf"x.{op[:-1]}\(...\)\)"):
        popsim.inferenceModel(model)(torch.ones(2, 3))


def test_a_layout_change_of_a_narrow_integer_view_is_not_arithmetic():
    """uint8 inputs arrive as int32; reshaping a view of one in place computes nothing."""
    assert_same(*run_both(lambda x: x[1:].unsqueeze_(0).float() * 2,
                          torch.arange(6, dtype=torch.uint8).reshape(2, 3)))


class WeightTransposedInPlace(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(3, 3))

    def forward(self, x):
        with torch.no_grad():
            self.weight.t_()
        return x @ self.weight


class UntrackedWrites(torch.nn.Module):
    """Writes autograd does not record: through a detached view, and under
    torch.no_grad(). The values change; gradients flow as if they had not."""

    def __init__(self):
        super().__init__()
        self.first = torch.nn.Linear(4, 4)
        self.second = torch.nn.Linear(4, 4)

    def forward(self, x, target):
        y = self.first(x)
        y.detach().add_(x)
        z = self.second(x)
        with torch.no_grad():
            z[:, 1:].mul_(2)
            z.sub_(y)
        out = y * z
        return out, torch.nn.functional.mse_loss(out, target)


def test_writes_autograd_does_not_record_keep_eagers_gradients():
    torch.manual_seed(11)
    batches = [(torch.randn(4, 4), torch.randn(4, 4)) for _ in range(3)]
    assert_same_state(*sgd_step_both(UntrackedWrites(), batches, lr=0.05))



class AddsOneToFirst(torch.nn.Module):
    def forward(self, a, b):
        a.add_(1)
        return b * 2


@pytest.mark.parametrize("second", [lambda x: x[:, 1:3], lambda x: x.t()[:, 2:],
                                    lambda x: x.view(-1)[14:].view(1, 2).expand(4, 2)],
                         ids=["slice", "transposed", "expanded"])
def test_an_input_written_in_place_may_not_share_memory_with_another(second):
    model = popsim.inferenceModel(AddsOneToFirst())
    x = torch.randn(4, 4)
    model(x, x[:, 2:].clone())  # separate memory
    with pytest.raises(popsim.InputError, match=(
            r"^Input 'a' shares memory with input 'b', and the model writes 'a' in place: eager "
            r"PyTorch would see the write through both, while popsim gives each input its own "
            r"copy. Pass separate tensors \(e.g. b.clone\(\)\).$")):
        model(x, second(x))
    # Disjoint parts of one tensor are separate inputs, as in eager PyTorch.
    both = torch.randn(4, 6)
    expected = both.clone()
    out = model(both[:, :4], both[:, 4:])
    torch.testing.assert_close(out, expected[:, 4:] * 2)
    torch.testing.assert_close(both, torch.cat([expected[:, :4] + 1, expected[:, 4:]], dim=1))


class ScalesItsInput(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 3)

    def forward(self, x, target):
        x.mul_(2)
        return torch.nn.functional.mse_loss(self.layer(x), target)


def test_gradients_trace_on_copies_of_the_inputs():
    torch.manual_seed(9)
    model, x, target = ScalesItsInput(), torch.randn(5, 4), torch.randn(5, 3)
    original = x.clone()
    _, weights = gradients(model, x, target)
    assert torch.equal(x, original)  # gradients() computes; it writes nothing back
    model(original.clone(), target).backward()
    torch.testing.assert_close(weights["layer.weight"], model.layer.weight.grad)
