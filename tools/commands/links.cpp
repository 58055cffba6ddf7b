// tracemodel links: the forward/backward links and the host-to-device links, as the library's
// linkers derive them from the events' args (not copied from the file's flows).
#include <cstdio>
#include <string>
#include <vector>

#include <tracemodel/algo/flows.hpp>
#include <tracemodel/algo/fwd_bwd.hpp>

#include "../input.hpp"
#include "../program.hpp"

namespace tracemodel_cli {
namespace links_command {  // (named: the parts compile in batches)

int run(arguments& a) {
  a.most_traces = 1;
  a.parse();
  return with_trace(a.one_trace(), reading::exact, false, [&](tmod::event_table& t) {
    tmod::link_forward_backward(t);
    tmod::link_device_activities(t, tmod::correlation_device_links{});
    // Host-to-device pairs: a runtime or driver call and what it launched (by correlation id).
    std::vector<tmod::flow_link> fwd, dev;
    for (const tmod::flow_link& l : t.links) {
      if (l.kind == tmod::flow_kind::fwd_bwd)
        fwd.push_back(l);
      else if (t.events[l.to].link == tmod::parent_link::correlation)
        dev.push_back(l);
    }
    if (!a.json) {
      std::printf("%zu forward/backward links, %zu host-to-device links\n", fwd.size(), dev.size());
      for (const auto& l : fwd)
        std::printf("  fwdbwd %3llu  %s -> %s\n", static_cast<unsigned long long>(l.id),
                    std::string(t.name(l.from)).c_str(), std::string(t.name(l.to)).c_str());
      for (const auto& l : dev)
        std::printf("  ac2g %6llu  %s -> %s\n", static_cast<unsigned long long>(l.id),
                    std::string(t.name(l.from)).c_str(), std::string(t.name(l.to)).c_str());
      return 0;
    }
    json_to_stdout([&](tmod::json_output& out) {
      auto endpoint = [&](tmod::event_index i) {
        const auto& e = t.events[i];
        out.raw("{\"name\":").string(t.name(e)).raw(",\"tid\":");
        write_tid(out, t, e.tid);
        out.raw(",\"ts_ns\":").integer(e.start_ns).ch('}');
      };
      out.ch('{');
      write_repairs(out, t.anomalies);
      out.raw(",\"links\":[");
      bool first = true;
      auto link = [&](const char* type, const tmod::flow_link& l) {
        out.raw(first ? "\n" : ",\n").raw("{\"type\":\"").raw(type).raw("\",\"id\":").id(l.id);
        first = false;
        out.raw(",\"from\":");
        endpoint(l.from);
        out.raw(",\"to\":");
        endpoint(l.to);
        out.ch('}');
      };
      for (const auto& l : fwd) link("fwdbwd", l);
      for (const auto& l : dev) link("ac2g", l);
      out.raw("\n]}\n");
    });
    return 0;
  });
}

const registrar links{
    {"links", "  links   forward/backward links and host-to-device links\n", 30, run}};

}  // namespace links_command
}  // namespace tracemodel_cli
