// Neural-network ops on the kernels of src/runtime/kernels.
#include "op_util.h"

namespace tailor::runtime {

void register_nn_ops() {}

}  // namespace tailor::runtime
