// The main job: trains a small MLP on the mini runtime for a few steps under the profiler,
// then writes the trace and prints (and writes) a report: the top of the call tree, key
// averages, forward/backward links and the anti-pattern report.
//
//   mini_runtime [--out DIR] [--steps N]
//
// The runtime indexes a tensor element by element in a loop and updates parameters one tensor
// at a time, so the for-loop indexing and single-tensor optimizer patterns fire.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <tuple>

#include <tracemodel/algo/analyze.hpp>
#include <tracemodel/algo/key_averages.hpp>
#include <tracemodel/algo/memory_timeline.hpp>
#include <tracemodel/algo/patterns.hpp>
#include <tracemodel/algo/pytorch_patterns.hpp>
#include <tracemodel/formats/chrome_trace_writer.hpp>
#include <tracemodel/formats/perfetto_writer.hpp>
#include <tracemodel/formats/pytorch_memory.hpp>

#include "runtime.hpp"

#ifndef MINI_RUNTIME_DEFAULT_OUT
#define MINI_RUNTIME_DEFAULT_OUT "mini_runtime_out"
#endif

namespace {

using mini::tensor;

struct linear_layer {
  std::string name;
  tensor weight, bias;
  linear_layer(std::string n, std::int64_t in_features, std::int64_t out_features,
               std::mt19937& rng)
      : name(std::move(n)),
        weight(mini::empty({out_features, in_features})),
        bias(mini::empty({out_features})) {
    std::normal_distribution<float> d(0.0f, 1.0f / std::sqrt(static_cast<float>(in_features)));
    for (std::int64_t i = 0; i < out_features; ++i)
      for (std::int64_t j = 0; j < in_features; ++j) weight->at(i, j) = d(rng);
    weight->requires_grad = bias->requires_grad = true;
  }
  tensor forward(const tensor& x) {
    mini::module_scope m(name);
    mini::op_scope op("aten::linear", {mini::in(x), mini::in(weight), mini::in(bias)});
    return mini::add(mini::matmul(x, mini::t(weight)), bias);
  }
};

struct mlp {
  linear_layer fc1, fc2;
  explicit mlp(std::mt19937& rng) : fc1("fc1", 8, 32, rng), fc2("fc2", 32, 1, rng) {}
  tensor forward(const tensor& x) {
    mini::module_scope m("MLP");
    return fc2.forward(mini::relu(fc1.forward(x)));
  }
  [[nodiscard]] std::vector<tensor> parameters() const {
    return {fc1.weight, fc1.bias, fc2.weight, fc2.bias};
  }
};

/// A batch: inputs from a normal distribution, the label 1 when the first four features sum
/// above zero. The labels are written one row at a time, the way a Python loop would.
std::pair<tensor, tensor> make_batch(std::mt19937& rng, std::int64_t batch) {
  MINI_FRAME();
  tensor x = mini::zeros({batch, 8});
  {
    mini::op_scope op("aten::normal_", {mini::in(x), mini::in(0.0), mini::in(1.0)});
    std::normal_distribution<float> d;
    for (std::int64_t i = 0; i < batch; ++i)
      for (std::int64_t j = 0; j < 8; ++j) x->at(i, j) = d(rng);
  }
  tensor y = mini::zeros({batch, 1});
  for (std::int64_t i = 0; i < batch; ++i) {
    const float s = x->at(i, 0) + x->at(i, 1) + x->at(i, 2) + x->at(i, 3);
    mini::fill_(mini::select(y, i), s > 0 ? 1.0 : 0.0);
  }
  return {x, y};
}

/// Plain SGD, one parameter tensor at a time (PyTorch's `foreach=False`).
void sgd_step(const std::vector<tensor>& params, double lr) {
  MINI_FRAME();
  mini::annotation step("Optimizer.step#SGD.step");
  mini::annotation single("optim::sgd::_single_tensor_sgd");
  for (const tensor& p : params)
    if (p->grad) mini::add_(p, p->grad, -lr);
}

/// What the runtime knows of its memory: the storages of the parameters and of every gradient
/// (to check the memory timeline's categories against).
struct memory_truth {
  std::set<std::pair<std::uint64_t, std::int64_t>> parameters, gradients;  // address, bytes
};
std::pair<std::uint64_t, std::int64_t> storage_of(const tensor& x) {
  return {reinterpret_cast<std::uint64_t>(x->st->data),
          static_cast<std::int64_t>(x->st->size * sizeof(float))};
}

float train_step(mlp& model, mini::engine& engine, std::mt19937& rng, int step,
                 memory_truth& truth) {
  MINI_FRAME();
  mini::annotation profiler_step("ProfilerStep#" + std::to_string(step));
  auto [x, y] = make_batch(rng, 16);
  const tensor loss = mini::binary_cross_entropy_with_logits(model.forward(x), y);
  engine.backward(loss);
  sgd_step(model.parameters(), 0.1);
  for (const tensor& p : model.parameters()) {
    truth.parameters.insert(storage_of(p));
    if (p->grad) truth.gradients.insert(storage_of(p->grad));
    p->grad = nullptr;  // zero_grad(set_to_none=True)
  }
  return loss->at(0);
}

/// The call tree under `root`, `max_depth` levels, runs of equal siblings folded ("x 16").
void print_tree(std::string& out, const tracemodel::event_table& t, tracemodel::event_index root,
                int max_depth) {
  struct item {
    tracemodel::event_index i;
    int depth;
    std::size_t count;  // > 1: a folded run starting at i
    std::int64_t total_ns;
    tracemodel::event_index second = tracemodel::no_event;  // a run of pairs: the pair's second
  };
  std::vector<item> stack{{root, 0, 1, t.events[root].duration_ns()}};
  char line[256];
  while (!stack.empty()) {
    const item it = stack.back();
    stack.pop_back();
    std::string name(t.name(it.i));
    if (it.second != tracemodel::no_event) name += ", " + std::string(t.name(it.second));
    if (it.count > 1)
      std::snprintf(line, sizeof line, "  %*s%s x %zu  %s\n", 2 * it.depth, "", name.c_str(),
                    it.count, tracemodel::format_duration(it.total_ns).c_str());
    else
      std::snprintf(line, sizeof line, "  %*s%s  %s\n", 2 * it.depth, "", name.c_str(),
                    tracemodel::format_duration(it.total_ns).c_str());
    out += line;
    if (it.count > 1 || it.depth + 1 >= max_depth) continue;
    const auto kids = t.children_of(t.events[it.i]);
    std::vector<item> next;
    std::vector<tracemodel::event_index> shown;
    for (tracemodel::event_index c : kids)
      if (!t.events[c].is<tracemodel::event_kind::allocation>()) shown.push_back(c);
    for (std::size_t k = 0; k < shown.size();) {
      // A run of one name, or of a pair of names, repeated at least three times.
      std::size_t period = 0, repeats = 0;
      for (std::size_t p : {std::size_t{1}, std::size_t{2}}) {
        std::size_t r = 1;
        while (k + (r + 1) * p <= shown.size()) {
          bool same = true;
          for (std::size_t m = 0; m < p && same; ++m)
            same = t.name(shown[k + r * p + m]) == t.name(shown[k + m]);
          if (!same) break;
          ++r;
        }
        if (r >= 3 && (p == 1 || t.name(shown[k]) != t.name(shown[k + 1]))) {
          period = p;
          repeats = r;
          break;
        }
      }
      if (period == 0) {
        next.push_back({shown[k], it.depth + 1, 1, t.events[shown[k]].duration_ns()});
        ++k;
        continue;
      }
      std::int64_t total = 0;
      for (std::size_t m = k; m < k + period * repeats; ++m)
        total += t.events[shown[m]].duration_ns();
      next.push_back({shown[k], it.depth + 1, repeats, total,
                      period == 2 ? shown[k + 1] : tracemodel::no_event});
      k += period * repeats;
    }
    for (auto r = next.rbegin(); r != next.rend(); ++r) stack.push_back(*r);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::filesystem::path out_dir = MINI_RUNTIME_DEFAULT_OUT;
  int steps = 3;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--out" && i + 1 < argc) {
      out_dir = argv[++i];
    } else if (a == "--steps" && i + 1 < argc) {
      steps = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: mini_runtime [--out DIR] [--steps N]\n");
      return 2;
    }
  }
  std::filesystem::create_directories(out_dir);

  // ---- the profiled run ----
  mini::queue_type queue;
  mini::session = &queue;
  queue.start();
  float first_loss = 0, last_loss = 0;
  memory_truth truth;
  {
    MINI_FRAME();
    mini::engine engine;
    std::mt19937 rng(7);
    mlp model(rng);
    for (int s = 0; s < steps; ++s) {
      last_loss = train_step(model, engine, rng, s, truth);
      if (s == 0) first_loss = last_loss;
    }
  }
  queue.stop();
  mini::session = nullptr;

  // ---- the analysis ----
  tracemodel::event_table t = tracemodel::materialize(queue);
  t.set_process_name(t.events.empty() ? 0 : t.events.front().pid, "mini_runtime");
  const tracemodel::analysis a = tracemodel::analyze(t);
  const std::filesystem::path trace_path = out_dir / "trace.json";
  tracemodel::write_chrome_trace_file(t, trace_path.string());
  const std::filesystem::path pftrace_path = out_dir / "trace.pftrace";  // Perfetto's own format
  tracemodel::write_perfetto_trace_file(t, pftrace_path.string());

  std::string r;
  char line[512];
  std::snprintf(line, sizeof line,
                "mini_runtime: %d training steps of an 8-32-1 MLP, loss %.3f -> %.3f\n", steps,
                static_cast<double>(first_loss), static_cast<double>(last_loss));
  r += line;
  std::vector<tracemodel::thread_key> threads;
  for (const auto& e : t.events)
    if (std::find(threads.begin(), threads.end(), e.tid) == threads.end()) threads.push_back(e.tid);
  std::snprintf(line, sizeof line, "recorded %zu events on %zu threads; trace: %s (and %s)\n\n",
                t.size(), threads.size(), trace_path.string().c_str(),
                pftrace_path.filename().string().c_str());
  r += line;
  // The first step's tree.
  for (tracemodel::event_index i = 0; i < t.size(); ++i)
    if (t.name(i) == "ProfilerStep#0") {
      r += "call tree of the first step (main thread):\n";
      print_tree(r, t, i, 3);
      break;
    }
  for (tracemodel::event_index i = 0; i < t.size(); ++i)
    if (t.name(i).starts_with("autograd::engine::evaluate_function")) {
      r += "the first backward function (autograd thread):\n";
      print_tree(r, t, i, 3);
      break;
    }
  const auto rows = tracemodel::key_averages(t, {.sort = tracemodel::sort_by::self});
  r += "\nkey averages, top 8 by self time:\n";
  r += tracemodel::format_key_averages(rows, 8);
  std::size_t backward_ops = 0;
  for (const auto& e : t.events)
    if (const auto* op = e.get_if<tracemodel::event_kind::op>();
        op != nullptr && op->fwd_thread_id > 0 && !t.name(e).starts_with("autograd::engine"))
      ++backward_ops;
  std::snprintf(line, sizeof line,
                "\nforward/backward links: %zu (backward ops: %zu), host/device links: %zu\n\n",
                a.fwd_bwd.links, backward_ops, a.device.links());
  r += line;
  // Where the memory went: the categories of PyTorch's memory profiler, checked against what
  // the runtime knows (which storages are parameters and gradients), and PyTorch's
  // export_memory_timeline file, which `tracemodel memory` and HTA's MemoryAnalysis read.
  const tracemodel::memory_timeline_result m = tracemodel::memory_timeline(t);
  tracemodel::write_memory_timeline_file(m, (out_dir / "memory.raw.json.gz").string());
  std::size_t right = 0, wrong = 0;
  for (const tracemodel::memory_block& b : m.blocks) {
    if (b.allocation == tracemodel::no_event) continue;
    const bool parameter = truth.parameters.contains({b.address, b.bytes});
    const bool gradient = truth.gradients.contains({b.address, b.bytes});
    const bool says_parameter = b.category == tracemodel::memory_category::parameter;
    const bool says_gradient = b.category == tracemodel::memory_category::gradient;
    if (says_parameter || says_gradient || parameter || gradient)
      ++((says_parameter && parameter) || (says_gradient && gradient) ? right : wrong);
  }
  std::snprintf(line, sizeof line, "memory: peak %s;",
                tracemodel::format_memory(m.peak.bytes).c_str());
  r += line;
  for (std::size_t c = 0; c < tracemodel::memory_categories; ++c)
    if (m.peak.by_category[c] != 0) {
      std::snprintf(line, sizeof line, " %s %s", tracemodel::memory_category_names[c].data(),
                    tracemodel::format_memory(m.peak.by_category[c]).c_str());
      r += line;
    }
  std::snprintf(line, sizeof line,
                "\nparameter and gradient blocks as the runtime knows them: %zu right, %zu "
                "wrong\n\n",
                right, wrong);
  r += line;
  const tracemodel::tree_view view(t);
  auto patterns = tracemodel::pytorch_patterns();
  tracemodel::pattern_context context = tracemodel::context_of(t);
  context.framework_prefix = "runtime.hpp";
  r += tracemodel::format_pattern_report(tracemodel::find_patterns(view, context, patterns));

  std::fputs(r.c_str(), stdout);
  std::ofstream(out_dir / "report.txt") << r;
  return 0;
}
