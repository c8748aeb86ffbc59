// Every pass: rewrites one graph in place (not its subgraphs: the pipeline walks those) and returns the
// number of rewrites it applied. A pass only rewrites when every condition of its pattern holds; else
// the graph is left as it was. pipeline.cc lists which passes run at which level.
#pragma once
#include <functional>

#include "core/status.h"
#include "ir/graph.h"
#include "passes/pass_util.h"

namespace ferry::passes {

using PassFn = std::function<Result<int>(ir::Graph& g, const PassContext& ctx)>;

// Cleanup (level 1 and up; also run on If/Loop/Scan bodies).
Result<int> eliminate_dead_code(ir::Graph& g, const PassContext& ctx);
Result<int> eliminate_identity(ir::Graph& g, const PassContext& ctx);
Result<int> drop_broadcast_expand(ir::Graph& g, const PassContext& ctx);
Result<int> fold_constants(ir::Graph& g, const PassContext& ctx);
Result<int> simplify_transpose_reshape(ir::Graph& g, const PassContext& ctx);

// The pass of that name (as pipeline.cc lists it, or a legalization rule's name), or an empty function.
PassFn pass_by_name(const std::string& name);

// Fusions and recognitions (level 2 and up).
Result<int> fold_batch_norm(ir::Graph& g, const PassContext& ctx);
Result<int> fold_pad(ir::Graph& g, const PassContext& ctx);
Result<int> recognize_gelu(ir::Graph& g, const PassContext& ctx);
// Reshape -> Transpose (0, 2, 1, ...) -> Reshape back (ShuffleNet) -> com.ferry ChannelShuffle.
Result<int> recognize_channel_shuffle(ir::Graph& g, const PassContext& ctx);
Result<int> recognize_layer_norm(ir::Graph& g, const PassContext& ctx);
Result<int> recognize_attention(ir::Graph& g, const PassContext& ctx);
Result<int> fuse_batch_norm_post_ops(ir::Graph& g, const PassContext& ctx);
Result<int> fuse_conv_post_ops(ir::Graph& g, const PassContext& ctx);
Result<int> fuse_matmul_post_ops(ir::Graph& g, const PassContext& ctx);

}  // namespace ferry::passes
