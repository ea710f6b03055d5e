// tailor convert: a llama2.c checkpoint to a Hugging Face folder.
#include <iostream>

#include "commands.h"
#include "tailor/io/llama2c.h"

namespace tailor::cli {

void add_convert(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "convert", "Write a llama2.c checkpoint as a HF folder (config.json + model.safetensors)");
  static std::string path, out_dir;
  cmd->add_option("CHECKPOINT", path, "llama2.c checkpoint (.bin)")->required();
  cmd->add_option("-o,--output", out_dir, "Output folder (created)")->required();
  cmd->callback([] {
    convert_llama2c_to_hf(path, out_dir);
    std::cout << "wrote " << out_dir << "/config.json and " << out_dir << "/model.safetensors\n";
  });
}

}  // namespace tailor::cli
