#include "onednn_conv.hpp"

#include <omp.h>

#include <algorithm>
#include <new>
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

// `user` as the layout `wanted`: the user's memory itself when the layouts agree (e.g. the
// plain NCHW input of a first layer with 3 channels), else a reorder into `scratch`.
memory to_layout(const memory& user, const memory::desc& wanted, void* scratch,
                 const dnnl::engine& engine, dnnl::stream& stream) {
  if (user.get_desc() == wanted) return user;
  memory converted(wanted, engine, scratch);
  dnnl::reorder(user, converted).execute(stream, const_cast<memory&>(user), converted);
  return converted;
}

// `result` (in a oneDNN layout) copied into the user's plain memory.
void from_layout(memory& result, memory& user, dnnl::stream& stream) {
  if (result.get_desc() == user.get_desc()) return;  // oneDNN wrote the user's memory itself
  dnnl::reorder(result, user).execute(stream, result, user);
}

// The memory oneDNN writes `wanted` into: the user's when the layouts agree, else scratch.
memory output_memory(memory& user, const memory::desc& wanted, void* scratch,
                     const dnnl::engine& engine) {
  return user.get_desc() == wanted ? user : memory(wanted, engine, scratch);
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

// The primitives of one geometry and batch. Descriptors of conflux's own layouts (user_*)
// and the layouts oneDNN chose for its kernels (in the primitive descriptors).
struct OnednnConv::Plan {
  memory::desc user_src, user_dst, user_weights, user_bias;
  dnnl::convolution_forward::primitive_desc forward_pd;
  dnnl::convolution_forward forward;
  dnnl::convolution_backward_data::primitive_desc data_pd;
  dnnl::convolution_backward_data backward_data;
  dnnl::convolution_backward_weights::primitive_desc weights_pd;
  dnnl::convolution_backward_weights backward_weights;
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
  slot = std::move(p);
  return *slot;
}

void OnednnConv::forward(const OnednnConvCall& call, const float* x, std::span<const float> weight,
                         std::span<const float> bias, float* y) {
  try {
    omp_set_num_threads(threads_);  // this thread's OpenMP setting, which oneDNN's calls use
    Plan& p = plan_for(call);
    const dnnl::convolution_forward::primitive_desc& pd = p.forward_pd;
    memory user_x(p.user_src, engine_, const_cast<float*>(x));
    memory user_w(p.user_weights, engine_, const_cast<float*>(weight.data()));
    memory user_b(p.user_bias, engine_, const_cast<float*>(bias.data()));
    memory user_y(p.user_dst, engine_, y);
    memory src = to_layout(user_x, pd.src_desc(), workspace_->a.get(pd.src_desc().get_size()),
                           engine_, stream_);
    memory w = to_layout(user_w, pd.weights_desc(), weights_fwd_.get(pd.weights_desc().get_size()),
                         engine_, stream_);
    memory dst =
        output_memory(user_y, pd.dst_desc(), workspace_->b.get(pd.dst_desc().get_size()), engine_);
    p.forward.execute(
        stream_,
        {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_BIAS, user_b}, {DNNL_ARG_DST, dst}});
    from_layout(dst, user_y, stream_);
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
    memory user_x(p.user_src, engine_, const_cast<float*>(x));
    memory user_dy(p.user_dst, engine_, const_cast<float*>(dy));
    memory user_dw(p.user_weights, engine_, weight_grad.data());
    memory user_db(p.user_bias, engine_, bias_grad.data());
    const auto& wpd = p.weights_pd;
    const auto& dpd = p.data_pd;
    memory dy_data = to_layout(user_dy, dpd.diff_dst_desc(),
                               workspace_->b.get(dpd.diff_dst_desc().get_size()), engine_, stream_);
    memory dy_weights =
        wpd.diff_dst_desc() == dpd.diff_dst_desc()
            ? dy_data
            : to_layout(user_dy, wpd.diff_dst_desc(),
                        workspace_->c.get(wpd.diff_dst_desc().get_size()), engine_, stream_);
    memory src = to_layout(user_x, wpd.src_desc(), workspace_->a.get(wpd.src_desc().get_size()),
                           engine_, stream_);
    memory dw = output_memory(user_dw, wpd.diff_weights_desc(),
                              weight_grad_.get(wpd.diff_weights_desc().get_size()), engine_);
    p.backward_weights.execute(stream_, {{DNNL_ARG_SRC, src},
                                         {DNNL_ARG_DIFF_DST, dy_weights},
                                         {DNNL_ARG_DIFF_WEIGHTS, dw},
                                         {DNNL_ARG_DIFF_BIAS, user_db}});
    from_layout(dw, user_dw, stream_);
    if (dx != nullptr) {
      memory user_w(p.user_weights, engine_, const_cast<float*>(weight.data()));
      memory user_dx(p.user_src, engine_, dx);
      memory w = to_layout(user_w, dpd.weights_desc(),
                           weights_bwd_.get(dpd.weights_desc().get_size()), engine_, stream_);
      memory dsrc = output_memory(user_dx, dpd.diff_src_desc(),
                                  workspace_->a.get(dpd.diff_src_desc().get_size()), engine_);
      p.backward_data.execute(
          stream_,
          {{DNNL_ARG_DIFF_DST, dy_data}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DIFF_SRC, dsrc}});
      from_layout(dsrc, user_dx, stream_);
    }
    stream_.wait();
  } catch (const dnnl::error& e) {
    CONFLUX_RUNTIME_ERROR("oneDNN convolution backward: {} (status {})", e.what(),
                          static_cast<int>(e.status));
  }
}

}  // namespace conflux::model
