// Compressed-weight ops (domain ai.tailor): CompressedLinear and CompressedConv.
#include "op_util.h"

namespace tailor::runtime {

void register_compressed_ops() {}

}  // namespace tailor::runtime
