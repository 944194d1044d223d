#include "graph/trace.h"

#include "core/dispatcher.h"
#include "core/random.h"

namespace ofl::graph {

namespace {

thread_local Trace* open_trace = nullptr;

// The dispatcher's traced kind: the call becomes a node of the open trace.
class TraceHandler : public KindHandler {
 public:
  std::vector<Tensor> run(const OpDef& def, const std::vector<Tensor>& in, const Attrs& attrs,
                          const std::vector<TensorMeta>& out) override {
    Trace* trace = Trace::current();
    if (!trace)
      fail(def.name.c_str(),
           "a traced tensor is used after its graph's tracing ended (a value "
           "kept from inside build()); use the graph's outputs instead");
    return trace->record(def, in, attrs, out);
  }
};

const bool registered = [] {
  static TraceHandler handler;
  set_kind_handler(TensorKind::kTraced, &handler);
  return true;
}();

}  // namespace

Trace::Trace() : prev_(open_trace), open_(true), generator_offset_(default_generator().offset()) {
  open_trace = this;
  set_tracing(true);
}

Trace::~Trace() {
  close();
}

void Trace::close() {
  if (!open_) return;
  open_ = false;
  // The counters random front ends reserved while tracing drew nothing: the graph's runs take
  // them (random_counters), as the eager calls would have.
  default_generator().set_offset(generator_offset_);
  open_trace = prev_;
  set_tracing(prev_ != nullptr);
}

Trace* Trace::current() {
  return open_trace;
}

Tensor Trace::input(const Tensor& example) {
  if (example.is_global())
    fail("graph", "global inputs are not supported by graph mode yet, got ", example.str());
  return traced(graph_.add_input({example.shape(), example.dtype(), example.device()}), false);
}

Tensor Trace::traced(int id, bool is_view) {
  const Value& v = graph_.values()[id];
  auto impl = std::make_shared<TensorImpl>();
  const size_t nbytes = numel_of(v.shape) * itemsize(v.dtype);
  impl->storage = std::make_shared<Storage>(nullptr, nbytes, v.device, nullptr);
  impl->shape = v.shape;
  impl->strides = contiguous_strides(v.shape);
  impl->dtype = v.dtype;
  impl->is_view = is_view;
  impl->traced = std::make_shared<TraceValue>(TraceValue{this, id});
  return Tensor(std::move(impl));
}

int Trace::value_of(const char* op, const Tensor& t) {
  if (!t.defined()) return -1;
  if (t.is_traced()) {
    if (t.impl()->traced->trace != this)
      fail(op, "a traced tensor from another graph's trace is used here");
    return t.impl()->traced->id;
  }
  if (t.is_global()) fail(op, "global tensors are not supported by graph mode yet, got ", t.str());
  auto [it, fresh] = captured_.try_emplace(t.impl(), -1);
  if (fresh) it->second = graph_.add_variable(t);
  return it->second;
}

std::vector<Tensor> Trace::record(const OpDef& def, const std::vector<Tensor>& in,
                                  const Attrs& attrs, const std::vector<TensorMeta>& out) {
  const char* op = def.name.c_str();
  if (def.inplace && in[0].is_traced() && in[0].impl()->is_view)
    fail(op, "writes in place through a view of shape ", shape_str(in[0].shape()),
         " while tracing; write into the viewed tensor, or clone() the view first");
  Node node{&def, attrs, {}, {}};
  // Random ops carry the seed and the first counter their front end reserved; the generator has
  // moved past the reservation since.
  if (attrs.has("seed") && attrs.has("offset")) {
    const Generator& g = default_generator();
    const auto offset = static_cast<uint64_t>(attrs.get<int64_t>("offset"));
    if (static_cast<uint64_t>(attrs.get<int64_t>("seed")) == g.seed() && g.offset() > offset)
      node.random_counters = g.offset() - offset;
  }
  node.inputs.reserve(in.size());
  for (const Tensor& t : in) node.inputs.push_back(value_of(op, t));
  std::vector<Tensor> outputs;
  for (size_t j = 0; j < out.size(); ++j) {
    const int id = graph_.add_value({out[j].shape, out[j].dtype, out[j].device});
    node.outputs.push_back(id);
    if (def.inplace && j == 0) {
      // SSA: the written tensor now stands for the node's output. A captured one (a parameter
      // or optimizer state updated in place) is written at run time, as in eager mode.
      if (in[0].is_traced())
        in[0].impl()->traced = std::make_shared<TraceValue>(TraceValue{this, id});
      else
        captured_[in[0].impl()] = id;
      outputs.push_back(in[0]);
    } else {
      outputs.push_back(traced(id, def.view != nullptr));
    }
  }
  graph_.add_node(std::move(node));
  return outputs;
}

Graph Trace::finish(const std::vector<Tensor>& outputs) {
  std::vector<int> ids;
  for (const Tensor& t : outputs) {
    if (!t.defined()) fail("graph", "build() returned None among its outputs");
    ids.push_back(value_of("graph", t));
  }
  graph_.set_outputs(std::move(ids));
  close();
  return std::move(graph_);
}

}  // namespace ofl::graph
