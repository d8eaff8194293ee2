#include "onednn_conv.hpp"

#include <omp.h>

#include <new>
#include <optional>
#include <utility>

#include "conflux/core/error.hpp"
#include "conflux/model/relu.hpp"

namespace conflux::model {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;
using Dt = memory::data_type;

memory::desc plain(const memory::dims& dims, Tag tag) {
  return memory::desc(dims, Dt::f32, tag);
}

memory::desc any(const memory::dims& dims) {
  return memory::desc(dims, Dt::f32, Tag::any);
}

// A reorder from one layout to another (conflux's plain one and the one a primitive chose),
// built once per plan; none where they agree (e.g. the plain NCHW input of a 3-channel
// first layer), and then the user's memory is used as it is.
struct Conversion {
  memory::desc from, to;
  std::optional<dnnl::reorder> reorder;

  Conversion() = default;
  Conversion(const memory::desc& f, const memory::desc& t, const dnnl::engine& engine)
      : from(f), to(t) {
    if (f != t) reorder.emplace(dnnl::reorder::primitive_desc(engine, f, engine, t));
  }
};

// `user`, in conflux's layout, as `c` leads on: itself, or converted into `scratch`.
memory converted_in(memory user, const Conversion& c, AlignedBuffer& scratch,
                    const dnnl::engine& engine, dnnl::stream& stream) {
  if (!c.reorder) return user;
  memory converted(c.to, engine, scratch.get(c.to.get_size()));
  c.reorder->execute(stream, user, converted);
  return converted;
}

// Where a primitive writes a result that `c` takes back to conflux's `user`: `user` itself,
// or `scratch`.
memory result_memory(memory user, const Conversion& c, AlignedBuffer& scratch,
                     const dnnl::engine& engine) {
  return c.reorder ? memory(c.from, engine, scratch.get(c.from.get_size())) : user;
}

// `result` (from result_memory) into conflux's `user`.
void converted_out(memory result, memory user, const Conversion& c, dnnl::stream& stream) {
  if (c.reorder) c.reorder->execute(stream, result, user);
}

}  // namespace

void* AlignedBuffer::get(std::size_t bytes) {
  if (bytes > bytes_) {
    const std::size_t rounded = (bytes + 63) / 64 * 64;
    bytes_ = 0;
    data_.reset(std::aligned_alloc(64, rounded));
    // As any allocation: main() reports it as out of memory, with what to do.
    if (data_ == nullptr) throw std::bad_alloc();
    bytes_ = rounded;
  }
  return data_.get();
}

// The primitives of one geometry and batch, and the reorders around them. Descriptors of
// conflux's own layouts (user_*) and the layouts oneDNN chose for its kernels (in the
// primitive descriptors).
struct OnednnConv::Plan {
  memory::desc user_src, user_dst, user_weights, user_bias;
  dnnl::convolution_forward::primitive_desc forward_pd;
  dnnl::convolution_forward forward;
  dnnl::convolution_backward_data::primitive_desc data_pd;
  dnnl::convolution_backward_data backward_data;
  dnnl::convolution_backward_weights::primitive_desc weights_pd;
  dnnl::convolution_backward_weights backward_weights;
  // Forward: input and weights in, output out.
  Conversion forward_src, forward_weights, forward_dst;
  // Backward: the output gradient in (for each primitive), the input and weights in, the
  // weight and input gradients out.
  Conversion data_dy, weights_dy, weights_src, data_weights, weight_grad, data_dx;
};

OnednnConv::OnednnConv(int threads, std::shared_ptr<ConvWorkspace> workspace)
    : threads_(threads),
      workspace_(workspace ? std::move(workspace) : std::make_shared<ConvWorkspace>()),
      engine_(dnnl::engine::kind::cpu, 0),
      stream_(engine_) {}

OnednnConv::~OnednnConv() = default;

OnednnConv::Plan& OnednnConv::plan_for(const OnednnConvCall& call) {
  const ConvGeometry& g = call.geometry;
  const std::array<int, 5> key{call.batch, g.channels, g.height, g.width, call.relu ? 1 : 0};
  std::unique_ptr<Plan>& slot = plans_[key];
  if (slot) return *slot;
  auto p = std::make_unique<Plan>();
  const memory::dims src{call.batch, g.channels, g.height, g.width};
  const memory::dims dst{call.batch, call.out_channels, g.out_height, g.out_width};
  const memory::dims weights{call.out_channels, g.channels, g.kernel, g.kernel};
  const memory::dims bias{call.out_channels};
  const memory::dims strides{g.stride, g.stride};
  const memory::dims padding{g.padding, g.padding};
  p->user_src = plain(src, Tag::nchw);
  p->user_dst = plain(dst, Tag::nchw);
  p->user_weights = plain(weights, Tag::oihw);
  p->user_bias = plain(bias, Tag::x);
  dnnl::primitive_attr attr;
  if (call.relu) {
    dnnl::post_ops ops;
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    attr.set_post_ops(ops);
  }
  // forward_training: the backward primitives take it as their hint.
  p->forward_pd = dnnl::convolution_forward::primitive_desc(
      {dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, any(src),
       any(weights), p->user_bias, any(dst), strides, padding, padding},
      attr, engine_);
  p->forward = dnnl::convolution_forward(p->forward_pd);
  p->data_pd = dnnl::convolution_backward_data::primitive_desc(
      {dnnl::algorithm::convolution_direct, any(src), any(weights), any(dst), strides, padding,
       padding},
      engine_, p->forward_pd);
  p->backward_data = dnnl::convolution_backward_data(p->data_pd);
  p->weights_pd = dnnl::convolution_backward_weights::primitive_desc(
      {dnnl::algorithm::convolution_direct, any(src), any(weights), p->user_bias, any(dst), strides,
       padding, padding},
      engine_, p->forward_pd);
  p->backward_weights = dnnl::convolution_backward_weights(p->weights_pd);
  add_conversions(*p);
  slot = std::move(p);
  return *slot;
}

void OnednnConv::add_conversions(Plan& p) const {
  const dnnl::engine& e = engine_;
  p.forward_src = {p.user_src, p.forward_pd.src_desc(), e};
  p.forward_weights = {p.user_weights, p.forward_pd.weights_desc(), e};
  p.forward_dst = {p.forward_pd.dst_desc(), p.user_dst, e};
  p.data_dy = {p.user_dst, p.data_pd.diff_dst_desc(), e};
  p.weights_dy = {p.user_dst, p.weights_pd.diff_dst_desc(), e};
  p.weights_src = {p.user_src, p.weights_pd.src_desc(), e};
  p.data_weights = {p.user_weights, p.data_pd.weights_desc(), e};
  p.weight_grad = {p.weights_pd.diff_weights_desc(), p.user_weights, e};
  p.data_dx = {p.data_pd.diff_src_desc(), p.user_src, e};
}

void OnednnConv::forward(const OnednnConvCall& call, const float* x, std::span<const float> weight,
                         std::span<const float> bias, float* y) {
  try {
    omp_set_num_threads(threads_);  // this thread's OpenMP setting, which oneDNN's calls use
    Plan& p = plan_for(call);
    memory user_y(p.user_dst, engine_, y);
    memory src = converted_in(memory(p.user_src, engine_, const_cast<float*>(x)), p.forward_src,
                              workspace_->a, engine_, stream_);
    memory w = converted_in(memory(p.user_weights, engine_, const_cast<float*>(weight.data())),
                            p.forward_weights, weights_fwd_, engine_, stream_);
    memory user_b(p.user_bias, engine_, const_cast<float*>(bias.data()));
    memory dst = result_memory(user_y, p.forward_dst, workspace_->b, engine_);
    p.forward.execute(
        stream_,
        {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_BIAS, user_b}, {DNNL_ARG_DST, dst}});
    converted_out(dst, user_y, p.forward_dst, stream_);
    stream_.wait();
  } catch (const dnnl::error& e) {
    CONFLUX_RUNTIME_ERROR("oneDNN convolution forward: {} (status {})", e.what(),
                          static_cast<int>(e.status));
  }
}

// The buffers: a holds the blocked input (for the weight gradient), then the blocked input
// gradient (the input is dead by then); b holds the blocked output gradient; c a second copy
// of it when the two backward primitives want it in different layouts.
void OnednnConv::backward(const OnednnConvCall& call, const float* x, const float* y,
                          const float* dy, std::span<const float> weight,
                          std::span<float> weight_grad, std::span<float> bias_grad, float* dx) {
  try {
    omp_set_num_threads(threads_);
    Plan& p = plan_for(call);  // the forward's: the backward primitives take it as their hint
    if (call.relu) {
      const std::size_t count = p.user_dst.get_size() / sizeof(float);
      auto* gated = static_cast<float*>(workspace_->gated.get(p.user_dst.get_size()));
      relu_gate(y, dy, count, gated);
      dy = gated;
    }
    memory user_dy(p.user_dst, engine_, const_cast<float*>(dy));
    memory user_dw(p.user_weights, engine_, weight_grad.data());
    memory user_db(p.user_bias, engine_, bias_grad.data());
    memory dy_data = converted_in(user_dy, p.data_dy, workspace_->b, engine_, stream_);
    memory dy_weights = p.weights_dy.to == p.data_dy.to
                            ? dy_data
                            : converted_in(user_dy, p.weights_dy, workspace_->c, engine_, stream_);
    memory src = converted_in(memory(p.user_src, engine_, const_cast<float*>(x)), p.weights_src,
                              workspace_->a, engine_, stream_);
    memory dw = result_memory(user_dw, p.weight_grad, weight_grad_, engine_);
    p.backward_weights.execute(stream_, {{DNNL_ARG_SRC, src},
                                         {DNNL_ARG_DIFF_DST, dy_weights},
                                         {DNNL_ARG_DIFF_WEIGHTS, dw},
                                         {DNNL_ARG_DIFF_BIAS, user_db}});
    converted_out(dw, user_dw, p.weight_grad, stream_);
    if (dx != nullptr) {
      memory user_dx(p.user_src, engine_, dx);
      memory w = converted_in(memory(p.user_weights, engine_, const_cast<float*>(weight.data())),
                              p.data_weights, weights_bwd_, engine_, stream_);
      memory dsrc = result_memory(user_dx, p.data_dx, workspace_->a, engine_);
      p.backward_data.execute(
          stream_,
          {{DNNL_ARG_DIFF_DST, dy_data}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DIFF_SRC, dsrc}});
      converted_out(dsrc, user_dx, p.data_dx, stream_);
    }
    stream_.wait();
  } catch (const dnnl::error& e) {
    CONFLUX_RUNTIME_ERROR("oneDNN convolution backward: {} (status {})", e.what(),
                          static_cast<int>(e.status));
  }
}

}  // namespace conflux::model
