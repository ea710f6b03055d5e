// `tailor run --passes`: the pass list is applied and reported; an unknown
// pass is a one-line error naming it.
#include <gtest/gtest.h>

#include "../graph/passes/showcase.h"
#include "tailor/io/npy.h"
#include "tailor/io/onnx.h"
#include "test_util.h"

namespace tailor::testing {
namespace {

TEST(RunCliPasses, AppliesThePassesAndKeepsTheOutputs) {
  TempDir dir;
  const std::string model = dir.file("showcase.onnx");
  graph::write_onnx(showcase_model(4, 6), model);
  write_npy(dir.file("x.npy"), random_f32({1, 4, 6, 6}, 120));
  const CommandResult none =
      run_cli("run " + model + " --input x=" + dir.file("x.npy") + " --passes none --output " +
              dir.file("none") + " --threads 1");
  ASSERT_EQ(none.exit_code, 0) << none.output;
  EXPECT_EQ(none.output.find("passes:"), std::string::npos) << none.output;
  const CommandResult all = run_cli("run " + model + " --input x=" + dir.file("x.npy") +
                                    " --output " + dir.file("all") + " --threads 1");
  ASSERT_EQ(all.exit_code, 0) << all.output;
  EXPECT_NE(all.output.find("passes: fold,simplify,strength,cse,hoist,fuse,dce (17 -> 2 nodes)"),
            std::string::npos)
      << all.output;
  EXPECT_LE(rel_inf_error(read_npy(dir.file("all/y.npy")), read_npy(dir.file("none/y.npy"))), 1e-5);
  const CommandResult some =
      run_cli("run " + model + " --input x=" + dir.file("x.npy") + " --passes dce,cse");
  EXPECT_NE(some.output.find("passes: cse,dce (17 -> 12 nodes)"), std::string::npos) << some.output;
}

TEST(RunCliPasses, UnknownPassIsAnErrorNamingIt) {
  TempDir dir;
  const std::string model = dir.file("showcase.onnx");
  graph::write_onnx(showcase_model(4, 6), model);
  const CommandResult r = run_cli("run " + model + " --passes fold,bogus");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--passes: unknown pass 'bogus'"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace tailor::testing
