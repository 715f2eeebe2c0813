// Recurrent layers: aten::lstm, gru, rnn_tanh and rnn_relu (nn.LSTM, nn.GRU,
// nn.RNN), unrolled over the sequence (its length is static): single and
// multi-layer, bidirectional, batch_first, initial states, LSTM's proj_size,
// dropout between layers in training. Each step is PyTorch's cell formula
// with its order of operations: the input's gates for every step at once
// (linear with b_ih), the hidden state's each step (linear with b_hh).

#include <algorithm>

#include "frontend/lowering_registry.h"
#include "frontend/lowerings/helpers.h"

namespace popsim::frontend::lowerings {
namespace {

enum class Cell { Lstm, Gru, RnnTanh, RnnRelu };

int64_t gateCount(Cell cell) {
  switch (cell) {
  case Cell::Lstm: return 4;
  case Cell::Gru: return 3;
  default: return 1;
  }
}

ir::Value* linear(LoweringContext& ctx, ir::Value* x, ir::Value* weight, ir::Value* bias) {
  std::vector<ir::Value*> inputs = {x, weight};
  if (bias != nullptr) inputs.push_back(bias);
  return ctx.emit(ir::OpKind::Linear, inputs);
}

// One direction of one layer's weights, in PyTorch's order.
struct Weights {
  ir::Value* inputWeight;
  ir::Value* hiddenWeight;
  ir::Value* inputBias = nullptr;
  ir::Value* hiddenBias = nullptr;
  ir::Value* projection = nullptr; // LSTM with proj_size
};

struct State {
  ir::Value* hidden;
  ir::Value* cell = nullptr; // LSTM
};

// One step of the cell from the input's gates (with b_ih) at this step.
State step(LoweringContext& ctx, Cell cell, const Weights& w, ir::Value* inputGates,
           const State& previous, int64_t hiddenSize) {
  ir::Value* hiddenGates = linear(ctx, previous.hidden, w.hiddenWeight, w.hiddenBias);
  const int64_t last = inputGates->type().rank() - 1;
  const auto gate = [&](ir::Value* gates, int64_t k) {
    return sliceAlong(ctx, gates, last, k * hiddenSize, (k + 1) * hiddenSize);
  };
  switch (cell) {
  case Cell::Lstm: {
    ir::Value* gates = add(ctx, inputGates, hiddenGates);
    ir::Value* in = ctx.emit(ir::OpKind::Sigmoid, {gate(gates, 0)});
    ir::Value* forget = ctx.emit(ir::OpKind::Sigmoid, {gate(gates, 1)});
    ir::Value* candidate = ctx.emit(ir::OpKind::Tanh, {gate(gates, 2)});
    ir::Value* out = ctx.emit(ir::OpKind::Sigmoid, {gate(gates, 3)});
    ir::Value* c = add(ctx, mul(ctx, forget, previous.cell), mul(ctx, in, candidate));
    ir::Value* h = mul(ctx, out, ctx.emit(ir::OpKind::Tanh, {c}));
    if (w.projection != nullptr) h = linear(ctx, h, w.projection, nullptr);
    return {h, c};
  }
  case Cell::Gru: {
    ir::Value* reset =
        ctx.emit(ir::OpKind::Sigmoid, {add(ctx, gate(hiddenGates, 0), gate(inputGates, 0))});
    ir::Value* update =
        ctx.emit(ir::OpKind::Sigmoid, {add(ctx, gate(hiddenGates, 1), gate(inputGates, 1))});
    ir::Value* fresh = ctx.emit(
        ir::OpKind::Tanh, {add(ctx, gate(inputGates, 2), mul(ctx, gate(hiddenGates, 2), reset))});
    ir::Value* h =
        add(ctx, mul(ctx, ctx.emit(ir::OpKind::Sub, {previous.hidden, fresh}), update), fresh);
    return {h};
  }
  default: {
    ir::Value* sum = add(ctx, inputGates, hiddenGates);
    return {ctx.emit(cell == Cell::RnnTanh ? ir::OpKind::Tanh : ir::OpKind::Relu, {sum})};
  }
  }
}

// The layer's initial state for one direction: [N, H] (or [H] unbatched).
ir::Value* stateAt(LoweringContext& ctx, ir::Value* states, int64_t index) {
  ir::Shape shape = states->type().shape;
  shape.erase(shape.begin());
  return reshape(ctx, sliceAlong(ctx, states, 0, index, index + 1), shape);
}

ir::Value* stacked(LoweringContext& ctx, const std::vector<ir::Value*>& values) {
  std::vector<ir::Value*> rows;
  for (ir::Value* v : values) {
    ir::Shape shape = v->type().shape;
    shape.insert(shape.begin(), 1);
    rows.push_back(reshape(ctx, v, shape));
  }
  return rows.size() == 1 ? rows[0] : ctx.emit(ir::OpKind::Concat, rows, {{"dim", int64_t{0}}});
}

// The layer's input, states and weights in one float dtype (the mixed-float
// casts of other layers' operands see no tensor lists): a float16 input runs
// float32 weights in float16, as PopTorch runs a layer's parameters in its
// activation's dtype; otherwise they take their common dtype as a list op's
// tensors do (withCommonDType: float32, or float16 under FloatDowncastToHalf).
void unifyRecurrentFloats(LoweringContext& ctx, ir::Value*& x, std::vector<ir::Value*>& hx,
                          std::vector<ir::Value*>& params) {
  std::vector<ir::Value*> all{x};
  all.insert(all.end(), hx.begin(), hx.end());
  all.insert(all.end(), params.begin(), params.end());
  if (x->type().dtype == ir::DType::Float16) {
    for (ir::Value*& v : all)
      v = castTo(ctx, v, ir::DType::Float16);
  } else {
    all = withCommonDType(ctx, std::move(all));
  }
  x = all[0];
  std::copy(all.begin() + 1, all.begin() + 1 + static_cast<std::ptrdiff_t>(hx.size()), hx.begin());
  std::copy(all.end() - static_cast<std::ptrdiff_t>(params.size()), all.end(), params.begin());
}

// aten::lstm / gru / rnn_tanh / rnn_relu (input, hx, params, has_biases,
// num_layers, dropout, train, bidirectional, batch_first).
template <Cell C> void lowerRecurrent(LoweringContext& ctx) {
  ir::Value* x = floatTensor(ctx, 0);
  if (ctx.argumentIndex("batch_sizes").has_value()) {
    ctx.unsupported("a packed sequence (pack_padded_sequence); pass the padded tensor, whose "
                    "length popsim unrolls");
  }
  std::vector<ir::Value*> hx =
      C == Cell::Lstm ? ctx.tensorList(1) : std::vector<ir::Value*>{ctx.tensor(1)};
  std::vector<ir::Value*> params = ctx.tensorList(2);
  unifyRecurrentFloats(ctx, x, hx, params);
  const bool biases = ctx.toBool(3);
  const int64_t layers = ctx.toInt(4);
  const double dropout = ctx.toDouble(5);
  const bool train = ctx.toBool(6);
  const bool bidirectional = ctx.toBool(7);
  const bool batchFirst = ctx.toBool(8);
  const int64_t directions = bidirectional ? 2 : 1;
  const bool unbatched = x->type().rank() == 2;
  if (unbatched) {
    x = reshape(ctx, x, {x->type().shape[0], 1, x->type().shape[1]});
    for (ir::Value*& h : hx)
      h = reshape(ctx, h, {h->type().shape[0], 1, h->type().shape[1]});
  } else if (batchFirst) {
    x = permute(ctx, x, {1, 0, 2});
  }
  if (x->type().rank() != 3)
    ctx.unsupported("a recurrent layer's input must be [T, N, F] or [T, F]");
  const int64_t steps = x->type().shape[0];
  // Per layer and direction: w_ih, w_hh, then b_ih, b_hh, then LSTM's w_hr.
  const size_t blocks = static_cast<size_t>(layers * directions);
  const size_t plain = biases ? 4 : 2;
  const size_t perDirection = params.size() / blocks; // (nn modules have a layer at least)
  if (params.size() % blocks != 0 ||
      (perDirection != plain && !(C == Cell::Lstm && perDirection == plain + 1))) {
    ctx.unsupported("a recurrent layer with " + std::to_string(params.size()) + " weight tensors");
  }
  std::vector<ir::Value*> lastHidden, lastCell;
  ir::Value* layerInput = x; // [T, N, F]
  for (int64_t layer = 0; layer < layers; ++layer) {
    if (layer > 0 && dropout > 0.0 && train) {
      layerInput = ctx.emitMulti(
          ir::OpKind::Dropout, {layerInput, ctx.randomCounter()},
          {{"p", dropout}, {"seed", ctx.randomSeed()}, {"stream", ctx.nextRandomStream()}})[0];
    }
    std::vector<ir::Value*> directionOutputs;
    for (int64_t direction = 0; direction < directions; ++direction) {
      const size_t base = static_cast<size_t>(layer * directions + direction) * perDirection;
      Weights w{params[base], params[base + 1]};
      size_t next = base + 2;
      if (biases) {
        w.inputBias = params[next++];
        w.hiddenBias = params[next++];
      }
      if (next < base + perDirection) w.projection = params[next];
      const int64_t hiddenSize = w.hiddenWeight->type().shape[0] / gateCount(C);
      ir::Value* inputGates =
          linear(ctx, layerInput, w.inputWeight, w.inputBias); // every step at once
      const int64_t index = layer * directions + direction;
      State state{stateAt(ctx, hx[0], index),
                  C == Cell::Lstm ? stateAt(ctx, hx[1], index) : nullptr};
      std::vector<ir::Value*> outputs(static_cast<size_t>(steps));
      for (int64_t s = 0; s < steps; ++s) {
        const int64_t t = direction == 0 ? s : steps - 1 - s;
        ir::Shape stepShape = inputGates->type().shape;
        stepShape.erase(stepShape.begin());
        state = step(ctx, C, w, reshape(ctx, sliceAlong(ctx, inputGates, 0, t, t + 1), stepShape),
                     state, hiddenSize);
        outputs[static_cast<size_t>(t)] = state.hidden;
      }
      directionOutputs.push_back(stacked(ctx, outputs));
      lastHidden.push_back(state.hidden);
      if (C == Cell::Lstm) lastCell.push_back(state.cell);
    }
    layerInput = directionOutputs.size() == 1
                     ? directionOutputs[0]
                     : ctx.emit(ir::OpKind::Concat, directionOutputs, {{"dim", int64_t{2}}});
  }
  ir::Value* output = layerInput;
  ir::Value* hidden = stacked(ctx, lastHidden);
  ir::Value* cell = C == Cell::Lstm ? stacked(ctx, lastCell) : nullptr;
  if (unbatched) {
    output = reshape(ctx, output, {steps, output->type().shape[2]});
    hidden = reshape(ctx, hidden, {hidden->type().shape[0], hidden->type().shape[2]});
    if (cell) cell = reshape(ctx, cell, {cell->type().shape[0], cell->type().shape[2]});
  } else if (batchFirst) {
    output = permute(ctx, output, {1, 0, 2});
  }
  ctx.setOutput(0, output);
  ctx.setOutput(1, hidden);
  if (C == Cell::Lstm) ctx.setOutput(2, cell);
}

// pack_padded_sequence: a PackedSequence's batch sizes are data, read on the host.
void lowerPackPadded(LoweringContext& ctx) {
  ctx.unsupported("a packed sequence (pack_padded_sequence); pass the padded tensor to the "
                  "recurrent layer, whose length popsim unrolls, and mask the padded steps");
}

} // namespace

void registerRecurrent(LoweringRegistry& registry) {
  registry.add("aten::_pack_padded_sequence", lowerPackPadded);
  registry.add("aten::lstm", lowerRecurrent<Cell::Lstm>);
  registry.add("aten::gru", lowerRecurrent<Cell::Gru>);
  registry.add("aten::rnn_tanh", lowerRecurrent<Cell::RnnTanh>);
  registry.add("aten::rnn_relu", lowerRecurrent<Cell::RnnRelu>);
}

} // namespace popsim::frontend::lowerings
