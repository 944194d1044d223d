// `_fused_elementwise`: a chain of elementwise ops as one op (ops/fused.h), made by graph mode's
// fusion pass. Its attributes are the program; its SBP rule is the elementwise one (the pass
// gives a fused node the layouts its parts had); it has no backward of its own: a graph fuses the
// parts of its backward as it fuses those of its forward.
#include "ops/fused.h"

#include <bit>

#include "ops/elementwise_sbp.h"
#include "ops/op_helpers.h"

namespace ofl::internal {

OFL_DEFINE_KERNEL(fused_elementwise_kernel, FusedElementwiseKernel)

namespace {

constexpr const char* kOp = "_fused_elementwise";
constexpr size_t kFields = 5;  // per step: family, code, a, b, c

}  // namespace

Attrs FusedProgram::attrs() const {
  std::vector<int64_t> program, scalars;
  for (const FusedStep& s : steps) {
    program.insert(program.end(), {int64_t(s.op.family), s.op.code, s.a, s.b, s.c});
    scalars.push_back(std::bit_cast<int64_t>(s.op.a));
    scalars.push_back(std::bit_cast<int64_t>(s.op.b));
  }
  return {{"inputs", int64_t(inputs)},
          {"program", std::move(program)},
          {"scalars", std::move(scalars)},
          {"outputs", std::vector<int64_t>(outputs.begin(), outputs.end())},
          {"shape", std::vector<int64_t>(shape.begin(), shape.end())},
          {"dtype", dtype}};
}

FusedProgram FusedProgram::from(const Attrs& attrs, const char* op) {
  FusedProgram p;
  p.inputs = int32_t(attrs.get<int64_t>("inputs"));
  const auto& program = attrs.get<std::vector<int64_t>>("program");
  const auto& scalars = attrs.get<std::vector<int64_t>>("scalars");
  const size_t steps = program.size() / kFields;
  if (program.size() % kFields || scalars.size() != 2 * steps || p.inputs < 0 ||
      p.inputs + int64_t(steps) > kMaxFusedRegisters)
    fail(op, "a program of ", program.size(), " fields, ", scalars.size(), " scalars and ",
         p.inputs, " inputs is malformed (", kFields, " fields and 2 scalars a step, at most ",
         kMaxFusedRegisters, " registers)");
  for (size_t i = 0; i < steps; ++i) {
    const int64_t* f = &program[i * kFields];
    const int64_t written = p.inputs + int64_t(i);  // registers below it are readable
    if (f[0] < 0 || f[0] > ElementwiseStep::kWhere)
      fail(op, "step ", i, " has family ", f[0], ", not unary, binary or where");
    const auto family = ElementwiseStep::Family(f[0]);
    const int operands = family == ElementwiseStep::kUnary    ? 1
                         : family == ElementwiseStep::kBinary ? 2
                                                              : 3;
    for (int k = 0; k < operands; ++k)
      if (f[2 + k] < 0 || f[2 + k] >= written)
        fail(op, "step ", i, " reads register ", f[2 + k], ", not one of the ", written,
             " written before it");
    p.steps.push_back({{family, int32_t(f[1]), std::bit_cast<double>(scalars[2 * i]),
                        std::bit_cast<double>(scalars[2 * i + 1])},
                       int32_t(f[2]),
                       int32_t(f[3]),
                       int32_t(f[4])});
  }
  const auto& outputs = attrs.get<std::vector<int64_t>>("outputs");
  if (outputs.size() > size_t(kMaxFusedOperands))
    fail(op, "the program has ", outputs.size(), " outputs, at most ", kMaxFusedOperands);
  for (int64_t r : outputs) {
    if (r < 0 || r >= p.registers())
      fail(op, "output register ", r, " is not one of the program's ", p.registers());
    p.outputs.push_back(int32_t(r));
  }
  p.dtype = attrs.get<DType>("dtype");
  if (!is_floating(p.dtype))
    fail<TypeError>(op, "computes in floating dtypes, got ", dtype_name(p.dtype));
  if (p.outputs.empty()) fail(op, "the program has no output");
  return p;
}

namespace {

// Whether `in` broadcasts to exactly `shape` (numpy's rule, aligned on the right).
bool broadcasts_to(const Shape& in, const std::vector<int64_t>& shape) {
  if (in.size() > shape.size()) return false;
  const size_t lead = shape.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d)
    if (in[d] != 1 && in[d] != shape[lead + d]) return false;
  return true;
}

std::vector<TensorMeta> infer_fused(const InferArgs& a) {
  const FusedProgram p = FusedProgram::from(a.attrs, a.op);
  if (int64_t(a.in.size()) != p.inputs)
    fail(a.op, "the program reads ", p.inputs, " inputs, got ", a.in.size());
  const Device device = common_device(a);
  const auto& shape = a.attrs.get<std::vector<int64_t>>("shape");
  size_t operands = p.outputs.size();
  for (const TensorMeta& m : a.in) {
    if (!broadcasts_to(m.shape, shape)) {
      broadcast_shapes(m.shape, shape, a.op);  // raises where the two do not broadcast
      fail(a.op, "input ", m.str(), " does not broadcast to the program's shape ",
           shape_str(shape));
    }
    operands += walked(m.shape);
  }
  if (operands > size_t(kMaxFusedOperands))
    fail(a.op, "takes at most ", kMaxFusedOperands,
         " outputs and inputs of more than one element, got ", operands);
  return std::vector<TensorMeta>(p.outputs.size(), TensorMeta{shape, p.dtype, device});
}

void compute_fused(const ComputeArgs& c) {
  const FusedProgram p = FusedProgram::from(c.attrs, kOp);
  fused_elementwise_kernel().get(c.out[0].device().type)(p, c.in, c.out);
}

OFL_REGISTER_OPS({
    {.name = kOp,
     .num_inputs = -1,
     .differentiable = false,
     .cost = elementwise_cost,
     .sbp = &elementwise_sbp::kElementwise,
     .attrs = {{"inputs", AttrType::kInt},
               {"program", AttrType::kInts},
               {"scalars", AttrType::kInts},
               {"outputs", AttrType::kInts},
               {"shape", AttrType::kInts},
               {"dtype", AttrType::kDType},
               // What the graph printed the parts as ("%5 = add(%3, %4); %6 = gelu(%5)")
               {"parts", AttrType::kString}},
     .infer = infer_fused,
     .compute = compute_fused},
});

}  // namespace
}  // namespace ofl::internal
