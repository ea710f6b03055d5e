// tailor._tailor: the C++ half of the Python API (docs/python.md). Every call
// is a thin front over the library entry points the `tailor` command uses
// (load_model, profile_model, plan::solve_plans, compress::compress_model,
// runtime::Executor); the pure-Python layer (python/tailor/__init__.py) wraps
// the plain values returned here into small classes. Long calls run with the
// GIL released; a progress callback is called with it reacquired.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "convert.h"
#include "numpy_tensor.h"
#include "progress.h"
#include "tailor/compress/compress.h"
#include "tailor/compress/output_damage.h"
#include "tailor/core/error.h"
#include "tailor/graph/passes.h"
#include "tailor/graph/passes/promote_f16.h"
#include "tailor/graph/weights.h"
#include "tailor/io/load_model.h"
#include "tailor/linalg/threads.h"
#include "tailor/llm/llama.h"
#include "tailor/plan/budget.h"
#include "tailor/plan/plan.h"
#include "tailor/profile/model_profile.h"
#include "tailor/profile/profile_cache.h"
#include "tailor/profile/profiler.h"
#include "tailor/runtime/executor.h"
#include "tailor/runtime/pass_options.h"

namespace py = pybind11;

namespace tailor::python {
namespace {

/// A loaded model: the file read as `tailor profile` reads it (weights
/// mapped), and, once run() is first called, the graph `tailor run` runs
/// (load_runnable_model, then the passes) compiled into an executor.
class Model {
 public:
  explicit Model(std::string path) : path_(std::move(path)), model_(load_model_mapped(path_)) {}

  const std::string& path() const { return path_; }
  const graph::Model& graph_model() const { return model_; }
  bool is_llama() const { return is_llama_checkpoint(model_); }

  /// Every weight with an [out, in] view: (name, op of its first consumer or
  /// "", stored shape, [out, in] shape, numel, dtype, layout).
  py::list layers() const {
    std::map<std::string, std::string> consumer;
    for (const graph::Node& n : model_.graph.nodes)
      for (const std::string& in : n.inputs) consumer.emplace(in, n.op_type);
    py::list out;
    for (const graph::WeightView& w : graph::weights(model_)) {
      if (w.layout == WeightLayout::none) continue;
      const auto it = consumer.find(w.name);
      py::dict d;
      d["name"] = w.name;
      d["op"] = it == consumer.end() ? py::object(py::none()) : py::cast(it->second);
      d["shape"] = py::tuple(py::cast(w.tensor.shape()));
      d["shape_out_in"] = py::tuple(py::cast(w.out_in_shape()));
      d["numel"] = w.tensor.numel();
      d["dtype"] = std::string(dtype_name(w.tensor.dtype()));
      d["layout"] = std::string(layout_name(w.layout));
      out.append(d);
    }
    return out;
  }

  /// One output of run: `writeable` is false when it shares bytes with a
  /// weight (a constant output), which numpy must not write.
  struct Output {
    std::string name;
    Tensor tensor;
    bool writeable = true;
  };
  /// Runs the model on `feeds` (name → owned tensor) as `tailor run --passes
  /// passes` does: KV-cache pasts a decoder omits are fed empty. Serialised
  /// per model (one executor, one arena). Returns the outputs in graph order.
  std::vector<Output> run(std::map<std::string, Tensor> feeds, const std::string& passes,
                          int threads) {
    std::lock_guard lock(mu_);
    linalg::set_threads(threads);
    if (!executor_ || passes != passes_) {
      executor_.reset();
      graph::Model m = load_runnable_model(path_);
      const std::vector<std::string> names = graph::parse_pass_list(passes);
      if (std::find(names.begin(), names.end(), "fold") != names.end())
        m = graph::recognise_compressed_weights(std::move(m), {});
      graph::promote_f16_to_f32(m);
      if (!names.empty())
        m = graph::run_passes(std::move(m), names, runtime::default_pass_options());
      weight_storage_.clear();
      for (const auto& [name, t] : m.graph.initializers) weight_storage_.insert(t.storage().get());
      executor_ = std::make_unique<runtime::Executor>(std::move(m));
      passes_ = passes;
    }
    for (auto& [name, t] : llm::empty_pasts(executor_->model(), feeds)) feeds[name] = std::move(t);
    llm::check_decoder_feeds(executor_->model(), feeds);
    std::map<std::string, Tensor> outs = executor_->run(feeds);
    std::vector<Output> ordered;
    for (const std::string& name : executor_->output_names()) {
      Tensor& t = outs.at(name);
      // An output sharing bytes with a weight (a constant output) is read-only.
      const bool writeable = weight_storage_.count(t.storage().get()) == 0;
      ordered.push_back({name, std::move(t), writeable});
    }
    return ordered;
  }

 private:
  std::string path_;
  graph::Model model_;
  std::mutex mu_;
  std::unique_ptr<runtime::Executor> executor_;
  std::string passes_;
  std::set<const Storage*> weight_storage_;
};

/// A profile or a plan held in its C++ form, so tailor.plan and the files
/// it writes see exactly what was measured.
struct ProfileHandle {
  ModelProfile profile;
};
struct PlanHandle {
  plan::Plan plan;
};

/// The Python layer's progress event: (stage, done, total, message).
py::object event(const char* stage, py::object done, py::object total, const std::string& msg) {
  return py::make_tuple(stage, std::move(done), std::move(total), msg);
}

std::vector<std::map<std::string, Tensor>> feed_list(const py::list& inputs,
                                                     const std::string& what) {
  std::vector<std::map<std::string, Tensor>> out;
  for (const py::handle& item : inputs) {
    std::map<std::string, Tensor> feeds;
    for (const auto& [k, v] : item.cast<py::dict>()) {
      const std::string name = k.cast<std::string>();
      feeds[name] = tensor_from_array(v.cast<py::array>(), what + " '" + name + "'");
    }
    out.push_back(std::move(feeds));
  }
  return out;
}

ProfileHandle profile(Model& model, std::optional<std::vector<std::string>> schemes,
                      std::optional<std::string> calib, std::optional<std::string> layers,
                      int64_t min_params, int threads, bool cache,
                      std::optional<py::list> damage_inputs, py::object progress_fn) {
  ProfileOptions options;
  if (schemes) {
    if (schemes->empty()) throw Error("schemes", "no scheme given");
    options.schemes = *schemes;
  }
  if (calib) options.calib = *calib;
  if (layers) options.layer_regex = *layers;
  options.min_params = min_params;
  options.threads = threads;
  std::vector<std::map<std::string, Tensor>> inputs;
  if (damage_inputs) {
    inputs = feed_list(*damage_inputs, "damage input");
    if (inputs.empty()) throw Error("damage_inputs", "no inputs given");
    if (model.graph_model().graph.nodes.empty())
      throw Error(model.path(), "damage_inputs: the model has no graph to run");
  }
  Progress progress(std::move(progress_fn));
  if (progress.active())
    // Counted here, under profile_model's lock, so `done` ascends call by call
    // (the workers' own counts can reach the lock out of order).
    options.on_layer = [&progress, done = size_t{0}](size_t, size_t total) mutable {
      ++done;
      progress.call(
          [&] {
            return event("profile", py::int_(done), py::int_(total),
                         std::to_string(done) + "/" + std::to_string(total) + " layers");
          },
          /*may_unwind=*/false);
    };
  return released(progress, [&] {
    linalg::set_threads(threads);
    ProfileHandle h;
    // The cache never holds damage measured here (its key would not say on what).
    const bool use_cache = cache && inputs.empty();
    const std::string key = use_cache ? profile_cache_key(model.path(), options) : std::string();
    if (auto cached = use_cache ? load_cached_profile(key) : std::nullopt) {
      h.profile = std::move(*cached);
      h.profile.model = model.path();
    } else {
      h.profile = profile_model(model.graph_model(), options);
      if (use_cache) store_cached_profile(key, h.profile);
    }
    if (!inputs.empty()) {
      compress::DamageOptions d;
      const graph::Model& g = model.graph_model();
      d.metric = compress::detect_damage_metric(g, g.graph.outputs.at(0));
      d.scheme_defaults = options.scheme_defaults;
      d.seed = options.seed;
      d.progress = [&progress](size_t done, size_t total) {
        progress.call(
            [&] {
              return event("output damage", py::int_(done), py::int_(total),
                           std::to_string(done) + "/" + std::to_string(total) + " layers");
            },
            true);
      };
      compress::measure_output_damage(g, inputs, h.profile, d);
      h.profile.calibration = std::to_string(inputs.size()) + " inputs given to tailor.profile";
    }
    return h;
  });
}

PlanHandle make_plan(const ProfileHandle& h, const std::string& budget_text,
                     const std::string& solver, std::optional<std::string> objective_name,
                     uint64_t seed, double time_limit, int threads) {
  const ModelProfile& profile = h.profile;
  py::gil_scoped_release nogil;
  linalg::set_threads(threads);
  const std::string source = profile.model.empty() ? std::string("profile") : profile.model;
  const plan::Budget budget = plan::parse_budget(budget_text);
  const int64_t bytes = plan::budget_bytes(budget, profile);
  const plan::Objective objective = plan::parse_objective(
      objective_name ? *objective_name : (profile.output_metric.empty() ? "numel" : "output"));
  const plan::Problem problem = plan::make_problem(profile, objective, bytes, source);
  plan::check_feasible(problem);
  plan::SolveOptions options;
  options.seed = seed;
  options.time_limit_s = time_limit;
  options.threads = threads;
  return PlanHandle{plan::solve_plans(profile, problem, {solver}, options, objective).front()};
}

/// Option `key` of `options` into `field` (popped); a value of the wrong type
/// or range is an Error naming the key (the Python layer checks each first).
template <class T>
void take(py::dict& options, const char* key, T& field) {
  if (options.contains(key)) {
    const py::object value = options[key];
    try {
      field = value.cast<T>();
    } catch (const py::cast_error&) {
      throw Error(key, std::string("a value of type ") + Py_TYPE(value.ptr())->tp_name +
                           " does not fit this option");
    }
    options.attr("pop")(key);
  }
}

py::dict compress(const std::string& path, const std::string& budget, const std::string& output,
                  py::dict options, py::object progress_fn) {
  compress::CompressOptions o;
  o.model = path;
  o.budget = budget;
  o.out_dir = output;
  options = py::dict(options);  // a copy: keys are popped as they are read
  take(options, "solver", o.solver);
  take(options, "objective", o.objective);
  take(options, "damage", o.damage);
  take(options, "uniform", o.uniform);
  take(options, "seed", o.seed);
  take(options, "calib", o.calib_dir);
  take(options, "task", o.task);
  take(options, "report", o.report);
  take(options, "schemes", o.schemes);
  take(options, "min_params", o.min_params);
  take(options, "threads", o.threads);
  take(options, "cache", o.cache);
  take(options, "ocr_lines", o.ocr_lines);
  take(options, "ocr_keys", o.ocr_keys);
  take(options, "inputs", o.random_inputs);
  take(options, "sequences", o.kld_sequences);
  take(options, "length", o.kld_length);
  take(options, "image_mean", o.image_mean);
  take(options, "image_std", o.image_std);
  take(options, "gguf", o.gguf);
  take(options, "tokenizer", o.tokenizer);
  take(options, "guard", o.uniform_guard);
  if (!options.empty())
    throw py::type_error("compress() got an unexpected keyword argument '" +
                         py::str(options.begin()->first).cast<std::string>() + "'");
  Progress progress(std::move(progress_fn));
  if (progress.active())
    o.progress = [&progress](const std::string& stage, const std::string& msg) {
      progress.call([&] { return event(stage.c_str(), py::none(), py::none(), msg); }, true);
    };
  auto handles = released(progress, [&] {
    linalg::set_threads(o.threads);
    compress::CompressResult r = compress::compress_model(o);
    return std::make_shared<compress::CompressResult>(std::move(r));
  });
  py::dict d = result_dict(*handles);
  d["plan"] = PlanHandle{handles->plan};
  d["profile"] = ProfileHandle{handles->profile};
  return d;
}

py::dict run(Model& model, const py::dict& feeds, const std::string& passes, int threads) {
  std::map<std::string, Tensor> tensors;
  for (const auto& [k, v] : feeds) {
    const std::string name = k.cast<std::string>();
    tensors[name] = tensor_from_array(v.cast<py::array>(), "input '" + name + "'");
  }
  std::vector<Model::Output> outs;
  {
    py::gil_scoped_release nogil;
    outs = model.run(std::move(tensors), passes, threads);
  }
  py::dict d;
  for (const Model::Output& o : outs) d[py::str(o.name)] = array_from_tensor(o.tensor, o.writeable);
  return d;
}

}  // namespace
}  // namespace tailor::python

PYBIND11_MODULE(_tailor, m) {
  using namespace tailor::python;
  m.doc() = "tailor's C++ API for Python (use the `tailor` package, docs/python.md)";

  static py::exception<tailor::Error> error(m, "Error");
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const tailor::Error& e) {
      py::object inst = py::reinterpret_borrow<py::object>(error)(e.what());
      inst.attr("source") = e.source();
      inst.attr("message") = e.message();
      PyErr_SetObject(error.ptr(), inst.ptr());
    }
  });

  py::class_<Model, std::shared_ptr<Model>>(m, "Model")
      .def_property_readonly("path", &Model::path)
      .def_property_readonly("format", [](const Model& x) { return x.graph_model().format; })
      .def_property_readonly("is_llama", &Model::is_llama)
      .def("layers", &Model::layers);
  py::class_<ProfileHandle>(m, "ProfileHandle")
      .def("to_dict", [](const ProfileHandle& h) { return profile_dict(h.profile); })
      .def("to_json", [](const ProfileHandle& h) { return tailor::profile_to_json(h.profile); })
      .def("save", [](const ProfileHandle& h, const std::string& path) {
        tailor::write_profile(path, h.profile);
      });
  py::class_<PlanHandle>(m, "PlanHandle")
      .def("to_dict", [](const PlanHandle& h) { return plan_dict(h.plan); })
      .def("to_json", [](const PlanHandle& h) { return tailor::plan::plan_to_json(h.plan); })
      .def("save", [](const PlanHandle& h, const std::string& path) {
        tailor::plan::write_plan(path, h.plan);
      });

  m.def(
      "load",
      [](const std::string& path) {
        py::gil_scoped_release nogil;
        return std::make_shared<Model>(path);
      },
      py::arg("path"));
  m.def("read_profile", [](const std::string& path) {
    py::gil_scoped_release nogil;
    return ProfileHandle{tailor::read_profile(path)};
  });
  m.def("profile", &profile, py::arg("model"), py::arg("schemes"), py::arg("calib"),
        py::arg("layers"), py::arg("min_params"), py::arg("threads"), py::arg("cache"),
        py::arg("damage_inputs"), py::arg("progress"));
  m.def("plan", &make_plan, py::arg("profile"), py::arg("budget"), py::arg("solver"),
        py::arg("objective"), py::arg("seed"), py::arg("time_limit"), py::arg("threads"));
  m.def("compress", &compress, py::arg("path"), py::arg("budget"), py::arg("output"),
        py::arg("options"), py::arg("progress"));
  m.def("run", &run, py::arg("model"), py::arg("feeds"), py::arg("passes"), py::arg("threads"));
  m.def("default_schemes", [] { return tailor::compress::default_schemes(); });
}
