//===- PlanHtml.cpp - the plan as a self-contained HTML page --------------===//
//
// Reads the plan JSON defensively (a field that is missing or of the wrong
// type reads as absent, and the page says what it could not draw), lays
// out the sections as HTML tables and inline SVG, and escapes every string
// it copies from the plan or the trace. No script: tooltips are SVG
// <title> elements, so the page works with JavaScript off.
//
//===----------------------------------------------------------------------===//

#include "driver/PlanHtml.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

using llvm::ArrayRef;
using llvm::StringRef;
namespace json = llvm::json;

namespace loom::driver {
namespace {

/// Drawing limits: a plan or trace from elsewhere may be huge; the page
/// draws this much and says what it left out.
constexpr size_t kMaxRows = 256;        ///< timeline / memory rows
constexpr size_t kMaxBlocks = 20000;    ///< rectangles per timeline
constexpr size_t kMaxMarks = 20000;     ///< thin marks per timeline
constexpr double kMaxGridDevices = 256; ///< devices drawn one by one
constexpr double kMaxRankList = 4096;   ///< devices listed by rank

// Layout of the SVG figures, in px.
constexpr double kFigWidth = 1000, kLabelWidth = 170, kRowHeight = 24,
                 kRowGap = 6, kAxisHeight = 28;

//===----------------------------------------------------------------------===//
// Text
//===----------------------------------------------------------------------===//

/// `s` as HTML text or attribute value: markup characters become entities
/// and control characters (other than tab and newline) are dropped.
std::string esc(StringRef s) {
  std::string r;
  r.reserve(s.size());
  for (char c : s) {
    switch (c) {
    case '&':
      r += "&amp;";
      break;
    case '<':
      r += "&lt;";
      break;
    case '>':
      r += "&gt;";
      break;
    case '"':
      r += "&quot;";
      break;
    case '\'':
      r += "&#39;";
      break;
    default:
      if (static_cast<unsigned char>(c) >= 0x20 || c == '\n' || c == '\t')
        r += c;
    }
  }
  return r;
}

std::string fmt(const char *f, double x) {
  if (!std::isfinite(x))
    return "?";
  char buf[64];
  std::snprintf(buf, sizeof buf, f, x);
  return buf;
}

/// A coordinate for an SVG attribute: finite and bounded whatever the input.
std::string px(double x) {
  if (!std::isfinite(x))
    x = 0;
  return fmt("%.1f", std::clamp(x, -1e7, 1e7));
}

std::string fmtBytes(double b) {
  if (!std::isfinite(b))
    return "?";
  static constexpr const char *kUnits[] = {"B",   "KiB", "MiB",
                                           "GiB", "TiB", "PiB"};
  int u = 0;
  while (std::fabs(b) >= 1024 && u < 5)
    b /= 1024, ++u;
  return fmt(u ? "%.3g" : "%.0f", b) + " " + kUnits[u];
}

std::string fmtTime(double s) {
  if (!std::isfinite(s))
    return "?";
  double a = std::fabs(s);
  if (a == 0)
    return "0 s";
  if (a >= 1)
    return fmt("%.4g", s) + " s";
  if (a >= 1e-3)
    return fmt("%.4g", s * 1e3) + " ms";
  if (a >= 1e-6)
    return fmt("%.4g", s * 1e6) + " us";
  return fmt("%.4g", s * 1e9) + " ns";
}

std::string fmtPct(double f) {
  // A small share is not 0.0%.
  if (f > 0 && f < 1e-4)
    return "<0.01%";
  return fmt(f > 0 && f < 1e-3 ? "%.2f" : "%.1f", 100 * f) + "%";
}

/// Ranks as ranges: "0-3, 8-11".
std::string rankRanges(const std::vector<int64_t> &ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1)
      ++j;
    if (!s.empty())
      s += ", ";
    s += std::to_string(ranks[i]);
    if (j > i)
      s += "-" + std::to_string(ranks[j]);
    i = j + 1;
  }
  return s;
}

/// A microbatch's colour; neighbours differ (golden-angle hues).
std::string mbColour(int64_t j) {
  double hue = std::fmod(double(std::max<int64_t>(j, 0)) * 137.508 + 210, 360);
  return "hsl(" + fmt("%.0f", hue) + ",62%,58%)";
}

//===----------------------------------------------------------------------===//
// Reading the plan
//===----------------------------------------------------------------------===//

double num(const json::Object *o, StringRef key, double def = 0) {
  if (!o)
    return def;
  std::optional<double> v = o->getNumber(key);
  return v && std::isfinite(*v) ? *v : def;
}

/// A count or index: a number clamped so that any file converts safely.
int64_t inum(const json::Object *o, StringRef key, double def = 0) {
  return int64_t(std::clamp(num(o, key, def), -1e15, 1e15));
}

std::string str(const json::Object *o, StringRef key) {
  if (!o)
    return "";
  std::optional<StringRef> v = o->getString(key);
  return v ? v->str() : "";
}

bool flag(const json::Object *o, StringRef key) {
  std::optional<bool> v = o ? o->getBoolean(key) : std::nullopt;
  return v && *v;
}

struct Axis {
  std::string name, link, bandwidth, latency;
  int64_t size = 1;
};

/// The mesh from the plan's "mesh" line, which cost::describeMesh writes as
/// "DEVICE: dp=2 (ib-ndr 50.0 GB/s, 5.0 us) x tp=4 (nvlink4 ...)". Empty
/// axes when the line has another form (the page then shows it as text).
struct Mesh {
  std::string device;
  std::vector<Axis> axes;
  double devices = 1;

  explicit Mesh(StringRef line) {
    if (line.size() > 100000)
      return;
    auto [dev, rest] = line.split(": ");
    if (rest.empty())
      return;
    device = dev.str();
    llvm::SmallVector<StringRef> parts;
    rest.split(parts, " x ");
    for (StringRef part : parts) {
      Axis a;
      auto [name, tail] = part.trim().split('=');
      size_t digits = tail.find_first_not_of("0123456789");
      if (name.empty() || digits == 0 ||
          tail.substr(0, digits).getAsInteger(10, a.size) || a.size <= 0) {
        axes.clear();
        devices = 1;
        return;
      }
      a.name = name.str();
      StringRef link = tail.substr(digits).trim();
      if (link.consume_front("(") && link.consume_back(")")) {
        auto [left, lat] = link.rsplit(", ");
        lat.consume_back(" us");
        left.consume_back(" GB/s");
        auto [linkName, bw] = left.rsplit(' ');
        a.link = linkName.str();
        a.bandwidth = bw.str();
        a.latency = lat.str();
      }
      axes.push_back(a);
      devices *= double(a.size);
    }
  }

  /// Index of the axis called `name`, or -1.
  int axisIndex(StringRef name) const {
    for (auto [i, a] : llvm::enumerate(axes))
      if (a.name == name)
        return int(i);
    return -1;
  }

  /// The ranks whose coordinate on axis `ax` is `k` (row-major numbering,
  /// outermost axis first); every rank when ax < 0. Empty when the mesh
  /// is too large to list.
  std::vector<int64_t> ranksAt(int ax, int64_t k) const {
    std::vector<int64_t> ranks;
    if (axes.empty() || devices > kMaxRankList)
      return ranks;
    int64_t inner = 1;
    for (size_t i = ax + 1; ax >= 0 && i < axes.size(); ++i)
      inner *= axes[i].size;
    for (int64_t r = 0; r < int64_t(devices); ++r)
      if (ax < 0 || (r / inner) % axes[ax].size == k)
        ranks.push_back(r);
    return ranks;
  }

  /// "dp=0, pp=1, tp=1" for a rank.
  std::string coords(int64_t r) const {
    std::string s;
    for (size_t i = axes.size(); i-- > 0;) {
      s = axes[i].name + "=" + std::to_string(r % axes[i].size) +
          (s.empty() ? "" : ", ") + s;
      r /= axes[i].size;
    }
    return s;
  }
};

struct Stage {
  int64_t index = 0, first = -1, last = -1, ops = -1;
  std::string firstOp;
  double seconds = 0;
  bool hasMemory = false, embedding = false, head = false;
  double weights = 0, kvCache = 0, activations = 0, capacity = 0;
};

struct P2p {
  int64_t from = 0, to = 0;
  double bytes = 0, seconds = 0;
};

/// The plan's `pipeline` section (contract E of issue #15,
/// docs/SHARDING.md), or one stage when there is none.
struct Pipeline {
  bool present = false;
  std::string axis = "pp", schedule = "gpipe";
  int64_t stages = 1, microbatches = 1;
  double bubble = 0, stageTime = 0, p2pTime = 0;
  std::vector<Stage> list;
  std::vector<P2p> p2p;
  std::vector<std::string> notes;

  Pipeline(const json::Object &plan, const json::Array *functions) {
    const json::Object *pp = plan.getObject("pipeline");
    if (!pp) {
      // One stage: the first function's predicted step.
      Stage s;
      if (functions && !functions->empty())
        s.seconds = num((*functions)[0].getAsObject(), "predicted_step_time_s");
      list.push_back(s);
      stageTime = s.seconds;
      return;
    }
    present = true;
    if (std::string a = str(pp, "axis"); !a.empty())
      axis = a;
    if (std::string s = str(pp, "schedule"); !s.empty())
      schedule = s;
    microbatches = int64_t(std::clamp(num(pp, "microbatches", 1), 1.0, 1e9));
    if (const json::Array *l = pp->getArray("stage_list")) {
      for (const json::Value &v : *l) {
        const json::Object *o = v.getAsObject();
        if (!o)
          continue;
        Stage s;
        s.index = inum(o, "stage", double(list.size()));
        if (const json::Array *layers = o->getArray("layers");
            layers && layers->size() == 2) {
          s.first = (*layers)[0].getAsInteger().value_or(-1);
          s.last = (*layers)[1].getAsInteger().value_or(-1);
        }
        s.firstOp = str(o, "first_op");
        s.ops = inum(o, "ops", -1);
        s.seconds = std::max(0.0, num(o, "predicted_s"));
        if (const json::Object *m = o->getObject("memory_bytes")) {
          s.hasMemory = true;
          s.weights = num(m, "weights");
          s.kvCache = num(m, "kv_cache");
          s.activations = num(m, "activations");
          s.capacity = num(m, "capacity");
        }
        s.embedding = flag(o, "has_embedding");
        s.head = flag(o, "has_head");
        list.push_back(s);
      }
    }
    stages = inum(pp, "stages", double(list.size()));
    if (list.empty()) {
      notes.push_back("the plan's pipeline section has no stage_list: drawn "
                      "as one stage");
      list.push_back(Stage());
    } else if (stages != int64_t(list.size())) {
      notes.push_back("the pipeline section says " + std::to_string(stages) +
                      " stages but lists " + std::to_string(list.size()) +
                      ": the list is drawn");
    }
    stages = int64_t(list.size());
    if (const json::Array *l = pp->getArray("p2p"))
      for (const json::Value &v : *l)
        if (const json::Object *o = v.getAsObject()) {
          P2p p{inum(o, "from"), inum(o, "to"), num(o, "bytes"),
                std::max(0.0, num(o, "predicted_s"))};
          p2p.push_back(p);
          p2pTime += p.seconds;
        }
    for (const Stage &s : list)
      stageTime = std::max(stageTime, s.seconds);
    double p = double(stages), m = double(microbatches);
    bubble = (p - 1) / (m + p - 1);
    if (std::optional<double> b = pp->getNumber("predicted_bubble");
        b && std::fabs(*b - bubble) > 1e-3)
      notes.push_back("the plan's predicted_bubble " + fmt("%.4f", *b) +
                      " is not (p-1)/(m+p-1) = " + fmt("%.4f", bubble));
  }

  /// Predicted step: (m + p - 1) slots of the slowest stage, plus the
  /// point-to-point transfers.
  double step() const {
    return double(microbatches + stages - 1) * stageTime + p2pTime;
  }
};

//===----------------------------------------------------------------------===//
// Timelines (predicted and measured share the drawing)
//===----------------------------------------------------------------------===//

struct Block {
  double start = 0, dur = 0;
  int64_t microbatch = 0;
  std::string tip;
};

struct Mark {
  double start = 0, dur = 0;
  bool p2p = false; ///< else a collective
  std::string tip;
};

struct Row {
  std::string label, tip;
  std::vector<Block> blocks;
  std::vector<Mark> marks;
};

/// A 1-2-5 tick step giving about `n` ticks over `span` seconds.
double tickStep(double span, int n) {
  double raw = span / n, mag = std::pow(10, std::floor(std::log10(raw)));
  for (double f : {1.0, 2.0, 5.0, 10.0})
    if (raw <= f * mag)
      return f * mag;
  return 10 * mag;
}

/// One timeline as SVG: a row per stage or rank over [0, span] seconds.
/// The hatched background of each row is idle time (the bubble).
void drawTimeline(llvm::raw_ostream &os, StringRef id,
                  const std::vector<Row> &rows, double span) {
  if (!(span > 0))
    span = 1e-9;
  double plotW = kFigWidth - kLabelWidth - 20;
  double scale = plotW / span;
  double height = rows.size() * (kRowHeight + kRowGap) + kAxisHeight;
  os << "<svg class=\"timeline\" id=\"" << id << "\" viewBox=\"0 0 "
     << px(kFigWidth) << " " << px(height) << "\" width=\"" << px(kFigWidth)
     << "\" height=\"" << px(height) << "\" role=\"img\"><defs><pattern id=\""
     << id
     << "-idle\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
        "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" "
        "fill=\"#f3f3f3\"/><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" "
        "stroke=\"#c9c9c9\" stroke-width=\"3\"/></pattern></defs>\n";
  for (auto [i, row] : llvm::enumerate(rows)) {
    double y = i * (kRowHeight + kRowGap);
    os << "<g class=\"row\"><text class=\"rowlabel\" x=\""
       << px(kLabelWidth - 8) << "\" y=\"" << px(y + kRowHeight * 0.68)
       << "\" text-anchor=\"end\">" << esc(row.label) << "</text>";
    os << "<rect class=\"idle\" x=\"" << px(kLabelWidth) << "\" y=\"" << px(y)
       << "\" width=\"" << px(plotW) << "\" height=\"" << px(kRowHeight)
       << "\" fill=\"url(#" << id << "-idle)\"><title>" << esc(row.tip)
       << "idle (bubble)</title></rect>\n";
    for (const Block &b : row.blocks) {
      double x = kLabelWidth + b.start * scale;
      double w = std::max(1.0, b.dur * scale);
      os << "<rect class=\"mb\" x=\"" << px(x) << "\" y=\"" << px(y + 1)
         << "\" width=\"" << px(w) << "\" height=\"" << px(kRowHeight - 2)
         << "\" fill=\"" << mbColour(b.microbatch)
         << "\" stroke=\"#fff\" stroke-width=\"0.5\"><title>" << esc(b.tip)
         << "</title></rect>";
      if (w >= 16)
        os << "<text class=\"mblabel\" x=\"" << px(x + w / 2) << "\" y=\""
           << px(y + kRowHeight * 0.68) << "\" text-anchor=\"middle\">"
           << b.microbatch << "</text>";
      os << "\n";
    }
    for (const Mark &m : row.marks) {
      double x = kLabelWidth + m.start * scale;
      double w = std::max(1.0, m.dur * scale);
      os << "<rect class=\"" << (m.p2p ? "p2p" : "coll") << "\" x=\"" << px(x)
         << "\" y=\"" << px(m.p2p ? y + kRowHeight - 4 : y) << "\" width=\""
         << px(w) << "\" height=\"4\"><title>" << esc(m.tip)
         << "</title></rect>\n";
    }
    os << "</g>\n";
  }
  // The time axis.
  double y = rows.size() * (kRowHeight + kRowGap);
  os << "<line class=\"axis\" x1=\"" << px(kLabelWidth) << "\" y1=\"" << px(y)
     << "\" x2=\"" << px(kLabelWidth + plotW) << "\" y2=\"" << px(y)
     << "\"/>\n";
  double step = tickStep(span, 8);
  for (int t = 0; t <= 20 && t * step <= span * 1.0001; ++t) {
    double x = kLabelWidth + t * step * scale;
    os << "<line class=\"axis\" x1=\"" << px(x) << "\" y1=\"" << px(y)
       << "\" x2=\"" << px(x) << "\" y2=\"" << px(y + 5) << "\"/><text "
       << "class=\"tick\" x=\"" << px(x) << "\" y=\"" << px(y + 18)
       << "\" text-anchor=\"middle\">" << esc(fmtTime(t * step)) << "</text>\n";
  }
  os << "</svg>\n";
}

/// The swatches under a timeline.
void drawLegend(llvm::raw_ostream &os, int64_t microbatches, bool marks) {
  os << "<p class=\"legend\">";
  int64_t shown = std::min<int64_t>(microbatches, 8);
  for (int64_t j = 0; j < shown; ++j)
    os << "<span class=\"sw\" style=\"background:" << mbColour(j)
       << "\"></span>";
  os << (microbatches > shown ? "&hellip; " : " ") << "microbatch 0"
     << (microbatches > 1 ? "-" + std::to_string(microbatches - 1) : "")
     << " <span class=\"sw idle\"></span> bubble (idle)";
  if (marks)
    os << " <span class=\"sw p2p\"></span> send/recv (p2p) "
          "<span class=\"sw coll\"></span> collective";
  os << "</p>\n";
}

//===----------------------------------------------------------------------===//
// Reading a trace
//===----------------------------------------------------------------------===//

/// The measured schedule of one step from a trace's events.
struct Measured {
  std::vector<Row> rows;
  double span = 0;
  int64_t microbatches = 0;
  size_t steps = 0, shownStep = 0;
  double bubbleShown = 0, bubbleMean = 0;
  std::vector<std::string> notes;
};

struct PipelineEvent {
  std::string tid, name, entry;
  double start = 0, dur = 0;
  int64_t stage = -1, microbatch = 0;
};

std::string tidOf(const json::Object &e) {
  const json::Value *t = e.get("tid");
  if (!t)
    return "?";
  if (std::optional<int64_t> i = t->getAsInteger())
    return std::to_string(*i);
  if (std::optional<StringRef> s = t->getAsString())
    return s->str();
  return "?";
}

Measured readTrace(const json::Value &trace) {
  Measured m;
  const json::Array *events = trace.getAsArray();
  if (const json::Object *o = trace.getAsObject())
    events = o->getArray("traceEvents");
  if (!events) {
    m.notes.push_back("the trace is not a Chrome trace (no traceEvents "
                      "array): nothing measured to draw");
    return m;
  }
  std::vector<PipelineEvent> pipeline;
  std::vector<std::pair<std::string, Mark>> marks;
  // Open B events per thread (collectives and spans of the runtime).
  std::map<std::string, std::vector<std::pair<std::string, double>>> open;
  for (const json::Value &v : *events) {
    const json::Object *e = v.getAsObject();
    if (!e)
      continue;
    std::string ph = str(e, "ph"), cat = str(e, "cat"), tid = tidOf(*e);
    std::string name = str(e, "name");
    double ts = num(e, "ts", NAN), dur = std::max(0.0, num(e, "dur"));
    if (!std::isfinite(ts))
      continue;
    ts *= 1e-6, dur *= 1e-6; // Chrome traces count microseconds
    if (ph == "X" && cat == "pipeline") {
      const json::Object *args = e->getObject("args");
      PipelineEvent p{tid,
                      name,
                      str(args, "entry"),
                      ts,
                      dur,
                      inum(args, "stage", -1),
                      inum(args, "microbatch")};
      pipeline.push_back(p);
    } else if (ph == "X") {
      marks.push_back({tid, Mark{ts, dur, cat == "p2p", name}});
    } else if (ph == "B") {
      open[tid].push_back({name, ts});
    } else if (ph == "E" && !open[tid].empty()) {
      // The runtime's B/E pairs: its collectives and point-to-point calls
      // (Context.cpp's OpScope); other spans are not drawn.
      auto [n, start] = open[tid].back();
      open[tid].pop_back();
      bool p2p = n == "send" || n == "recv" || n == "sendrecv";
      bool collective =
          llvm::is_contained({"all_reduce", "all_gather", "reduce_scatter",
                              "all_to_all", "barrier"},
                             n);
      if (p2p || collective)
        marks.push_back({tid, Mark{start, ts - start, p2p, n}});
    }
  }
  if (pipeline.empty()) {
    m.notes.push_back(
        "the trace has no events with \"cat\": \"pipeline\" (a run without "
        "pipeline stages, or a loom-run older than issue #15): nothing "
        "measured to draw");
    return m;
  }
  llvm::stable_sort(
      pipeline, [](const auto &a, const auto &b) { return a.start < b.start; });
  // Steps begin where stage 0 starts microbatch 0; the other ranks of
  // stage 0 (tp, dp) start it at about the same time, inside the first
  // one's call: the same step.
  std::vector<double> starts;
  double firstEnd = -INFINITY;
  for (const PipelineEvent &p : pipeline)
    if (p.stage == 0 && p.microbatch == 0 && p.start >= firstEnd) {
      starts.push_back(p.start);
      firstEnd = p.start + p.dur;
    }
  if (starts.empty())
    starts.push_back(pipeline.front().start);
  starts[0] = std::min(starts[0], pipeline.front().start);
  m.steps = starts.size();
  auto stepOf = [&](double t) {
    size_t n =
        std::upper_bound(starts.begin(), starts.end(), t) - starts.begin();
    return n ? n - 1 : 0;
  };
  // Each step's bubble: 1 - the ranks' mean busy time / the step's span.
  struct StepStats {
    double begin = INFINITY, end = -INFINITY;
    std::map<std::string, double> busy;
  };
  std::vector<StepStats> stats(m.steps);
  for (const PipelineEvent &p : pipeline) {
    StepStats &s = stats[stepOf(p.start)];
    s.begin = std::min(s.begin, p.start);
    s.end = std::max(s.end, p.start + p.dur);
    s.busy[p.tid] += p.dur;
  }
  auto bubbleOf = [](const StepStats &s) {
    double span = s.end - s.begin, busy = 0;
    for (auto &[tid, b] : s.busy)
      busy += std::min(b, span);
    return span > 0 ? 1 - busy / (span * s.busy.size()) : 0;
  };
  for (const StepStats &s : stats)
    m.bubbleMean += bubbleOf(s) / double(m.steps);
  // The last step is drawn: earlier ones may be warm-up.
  m.shownStep = m.steps - 1;
  const StepStats &shown = stats[m.shownStep];
  m.bubbleShown = bubbleOf(shown);
  m.span = shown.end - shown.begin;
  std::map<std::string, size_t> rowOf;
  std::vector<std::pair<int64_t, std::string>> order; // (stage, tid)
  std::map<std::string, int64_t> stageOfTid;
  for (const PipelineEvent &p : pipeline)
    if (stepOf(p.start) == m.shownStep && !stageOfTid.count(p.tid)) {
      stageOfTid[p.tid] = p.stage;
      order.push_back({p.stage, p.tid});
    }
  llvm::sort(order, [](const auto &a, const auto &b) {
    if (a.first != b.first)
      return a.first < b.first;
    int64_t x, y;
    if (!StringRef(a.second).getAsInteger(10, x) &&
        !StringRef(b.second).getAsInteger(10, y))
      return x < y;
    return a.second < b.second;
  });
  if (order.size() > kMaxRows) {
    m.notes.push_back("the trace has " + std::to_string(order.size()) +
                      " ranks with pipeline events; the first " +
                      std::to_string(kMaxRows) + " are drawn");
    order.resize(kMaxRows);
  }
  for (auto &[stage, tid] : order) {
    rowOf[tid] = m.rows.size();
    Row r;
    r.label = "rank " + tid + " \xC2\xB7 stage " + std::to_string(stage);
    r.tip = "rank " + tid + ": ";
    m.rows.push_back(r);
  }
  size_t blocks = 0, drawnMarks = 0;
  for (const PipelineEvent &p : pipeline) {
    auto it = rowOf.find(p.tid);
    if (it == rowOf.end() || stepOf(p.start) != m.shownStep)
      continue;
    if (++blocks > kMaxBlocks)
      break;
    m.microbatches = std::max(m.microbatches, p.microbatch + 1);
    m.rows[it->second].blocks.push_back(
        Block{p.start - shown.begin, p.dur, p.microbatch,
              p.name + ": " + fmtTime(p.dur) + " at " +
                  fmtTime(p.start - shown.begin)});
  }
  if (blocks > kMaxBlocks)
    m.notes.push_back("the step has more than " + std::to_string(kMaxBlocks) +
                      " stage calls; the first are drawn");
  for (auto &[tid, mark] : marks) {
    auto it = rowOf.find(tid);
    if (it == rowOf.end() || mark.start + mark.dur < shown.begin ||
        mark.start > shown.end || ++drawnMarks > kMaxMarks)
      continue;
    double start = std::max(mark.start, shown.begin);
    double end = std::min(mark.start + mark.dur, shown.end);
    Mark k = mark;
    k.tip = mark.tip + " (" + (mark.p2p ? "p2p" : "collective") +
            "): " + fmtTime(mark.dur);
    k.start = start - shown.begin;
    k.dur = end - start;
    m.rows[it->second].marks.push_back(k);
  }
  return m;
}

//===----------------------------------------------------------------------===//
// The page
//===----------------------------------------------------------------------===//

constexpr const char *kStyle = R"css(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#222;margin:24px auto;max-width:1040px;padding:0 12px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:3px}
.sub{color:#555;margin:0 0 12px}
table{border-collapse:collapse;margin:6px 0}th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f5f5f5}td.n{text-align:right;font-variant-numeric:tabular-nums}
svg{max-width:100%;height:auto;display:block;margin:6px 0}
svg text{font:12px system-ui,sans-serif;fill:#222}svg .mblabel{font-size:10px;fill:#fff}
svg .tick{font-size:11px;fill:#555}svg .axis{stroke:#888;stroke-width:1}
svg .p2p{fill:#333}svg .coll{fill:#8e44ad}
.legend{color:#444;font-size:13px}.sw{display:inline-block;width:12px;height:12px;border:1px solid #999;vertical-align:-2px;margin-right:2px}
.sw.idle{background:repeating-linear-gradient(45deg,#f3f3f3 0 3px,#c9c9c9 3px 5px)}.sw.p2p{background:#333}.sw.coll{background:#8e44ad}
.sw.w{background:#4a7bd0}.sw.kv{background:#e8923a}.sw.act{background:#4caf6a}.sw.free{background:#fff}
.note{background:#fff8e1;border-left:4px solid #f0b400;padding:6px 10px;margin:8px 0}
.big{font-size:16px}.muted{color:#666}code{background:#f3f3f3;padding:0 3px}
)css";

class Page {
public:
  Page(const json::Object &plan, const std::optional<json::Value> &trace)
      : plan(plan), trace(trace), functions(plan.getArray("functions")),
        mesh(str(&plan, "mesh")), pipe(plan, functions) {
    if (!pipe.present && mesh.axisIndex("pp") >= 0 &&
        mesh.axes[mesh.axisIndex("pp")].size > 1)
      pipe.notes.push_back("the mesh has an axis 'pp' but the plan has no "
                           "pipeline section: 'pp' was planned as one more "
                           "sharding axis, not as stages");
    if (pipe.present) {
      ppAxis = mesh.axisIndex(pipe.axis);
      if (!mesh.axes.empty() && ppAxis < 0)
        pipe.notes.push_back("the mesh has no axis '" + pipe.axis +
                             "' (the pipeline's): ranks per stage unknown");
      else if (ppAxis >= 0 && mesh.axes[ppAxis].size != pipe.stages)
        pipe.notes.push_back("axis '" + pipe.axis + "' has size " +
                             std::to_string(mesh.axes[ppAxis].size) +
                             " but the plan lists " +
                             std::to_string(pipe.stages) + " stages");
    }
  }

  std::string render() {
    std::string text;
    llvm::raw_string_ostream os(text);
    std::string title = "Loom plan: " + str(&plan, "mesh");
    os << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
       << "<meta name=\"generator\" content=\"loomc --emit=plan-html\">"
       << "<title>" << esc(title) << "</title><style>" << kStyle
       << "</style></head>\n<body>\n";
    header(os);
    meshSection(os);
    stagesSection(os);
    memorySection(os);
    scheduleSection(os);
    if (trace)
      measuredSection(os);
    functionsSection(os);
    os << "<p class=\"muted\">Drawn by <code>loomc --emit=plan-html</code> "
          "from the plan JSON (docs/PLAN-HTML.md).</p>\n</body></html>\n";
    return text;
  }

private:
  /// The ranks of stage k as text ("ranks 0-1"), or a count.
  std::string stageRanks(int64_t k) const {
    int ax = pipe.present ? ppAxis : -1;
    if (pipe.present && ax < 0)
      return "";
    std::vector<int64_t> ranks = mesh.ranksAt(ax, k);
    if (!ranks.empty())
      return (ranks.size() == 1 ? "rank " : "ranks ") + rankRanges(ranks);
    if (mesh.axes.empty())
      return "";
    double n = ax < 0 ? mesh.devices : mesh.devices / mesh.axes[ax].size;
    return fmt("%.0f", n) + " devices";
  }

  void notes(llvm::raw_ostream &os, const std::vector<std::string> &list) {
    for (const std::string &n : list)
      os << "<p class=\"note\">Note: " << esc(n) << "</p>\n";
  }

  void header(llvm::raw_ostream &os) {
    os << "<h1>Loom plan</h1>\n<p class=\"sub\">Mesh <b>"
       << esc(str(&plan, "mesh")) << "</b><br>device <b>"
       << esc(str(&plan, "device")) << "</b>";
    if (!mesh.axes.empty())
      os << ", " << fmt("%.0f", mesh.devices) << " devices";
    os << ", memory limit " << fmtBytes(num(&plan, "memory_limit_bytes"))
       << " per device";
    if (pipe.present)
      os << ", " << pipe.stages << " pipeline stages (" << esc(pipe.schedule)
         << ", " << pipe.microbatches << " microbatches)";
    os << ", planned in " << fmtTime(num(&plan, "planner_seconds")) << "</p>\n";
    if (!functions)
      notes(os, {"the plan has no functions array"});
    notes(os, pipe.notes);
  }

  void meshSection(llvm::raw_ostream &os) {
    os << "<h2>Mesh</h2>\n";
    if (mesh.axes.empty()) {
      os << "<p>" << esc(str(&plan, "mesh"))
         << " <span class=\"muted\">(not in the form of cost::describeMesh: "
            "drawn as text)</span></p>\n";
      return;
    }
    os << "<table><tr><th>axis</th><th>size</th><th>link</th>"
          "<th>bandwidth per device</th><th>latency</th><th>role</th></tr>\n";
    for (auto [i, a] : llvm::enumerate(mesh.axes)) {
      std::string role = int(i) == ppAxis ? "pipeline stages"
                         : a.name == "dp" ? "data parallel (replicas)"
                                          : "sharding inside a stage";
      os << "<tr><td><b>" << esc(a.name) << "</b></td><td class=\"n\">"
         << a.size << "</td><td>" << esc(a.link) << "</td><td class=\"n\">"
         << esc(a.bandwidth) << " GB/s</td><td class=\"n\">" << esc(a.latency)
         << " us</td><td>" << role << "</td></tr>\n";
    }
    os << "</table>\n<p class=\"muted\">Ranks are numbered row-major over "
          "the axes in this order (the last axis varies fastest).</p>\n";
    if (mesh.devices > kMaxGridDevices)
      return;
    // The devices, grouped by stage (one group when there is no pp axis).
    int64_t groups = ppAxis >= 0 ? mesh.axes[ppAxis].size : 1;
    constexpr double cell = 30, perRow = 8;
    double groupW = 0, y0 = 22;
    std::vector<std::vector<int64_t>> members;
    double maxRows = 1;
    for (int64_t k = 0; k < groups; ++k) {
      members.push_back(mesh.ranksAt(ppAxis, k));
      double n = double(members.back().size());
      groupW = std::max(groupW, std::min(n, perRow) * cell);
      maxRows = std::max(maxRows, std::ceil(n / perRow));
    }
    groupW += 24;
    double w = std::max(groupW * groups, 200.0), h = y0 + maxRows * cell + 10;
    os << "<svg class=\"devices\" viewBox=\"0 0 " << px(w) << " " << px(h)
       << "\" width=\"" << px(w) << "\" height=\"" << px(h)
       << "\" role=\"img\">\n";
    for (int64_t k = 0; k < groups; ++k) {
      double gx = k * groupW;
      os << "<text x=\"" << px(gx) << "\" y=\"14\">stage " << k << "</text>\n";
      for (auto [i, r] : llvm::enumerate(members[k])) {
        double x = gx + double(i % size_t(perRow)) * cell;
        double y = y0 + std::floor(double(i) / perRow) * cell;
        os << "<rect x=\"" << px(x) << "\" y=\"" << px(y)
           << "\" width=\"26\" height=\"26\" rx=\"4\" fill=\"" << mbColour(k)
           << "\" fill-opacity=\"0.35\" stroke=\"#555\"><title>rank " << r
           << ": " << esc(mesh.coords(r)) << "</title></rect><text x=\""
           << px(x + 13) << "\" y=\"" << px(y + 17)
           << "\" text-anchor=\"middle\">" << r << "</text>\n";
      }
    }
    os << "</svg>\n";
  }

  void stagesSection(llvm::raw_ostream &os) {
    os << "<h2>Stages</h2>\n";
    if (!pipe.present)
      os << "<p>One stage (stage 0): the mesh has no pipeline axis, every "
            "device runs every layer.</p>\n";
    os << "<table><tr><th>stage</th><th>devices</th><th>layers</th>"
          "<th>ops</th><th>first op</th><th>predicted per microbatch</th>"
          "<th>holds</th></tr>\n";
    size_t shown = std::min(pipe.list.size(), kMaxRows);
    for (const Stage &s : ArrayRef<Stage>(pipe.list).take_front(shown)) {
      std::string layers = !pipe.present ? "all"
                           : s.first < 0 ? "none"
                                         : std::to_string(s.first) + "-" +
                                               std::to_string(s.last);
      std::string holds;
      if (s.embedding)
        holds += "embedding";
      if (s.head)
        holds += holds.empty() ? "head" : ", head";
      os << "<tr><td>stage " << s.index << "</td><td>"
         << esc(stageRanks(s.index)) << "</td><td>" << esc(layers)
         << "</td><td class=\"n\">" << (s.ops >= 0 ? std::to_string(s.ops) : "")
         << "</td><td>" << esc(s.firstOp) << "</td><td class=\"n\">"
         << fmtTime(s.seconds) << "</td><td>" << holds << "</td></tr>\n";
    }
    os << "</table>\n";
    if (pipe.p2p.empty())
      return;
    os << "<p>Point-to-point between stages: ";
    for (auto [i, p] : llvm::enumerate(pipe.p2p))
      os << (i ? "; " : "") << "stage " << p.from << " &rarr; " << p.to << " "
         << fmtBytes(p.bytes) << " in " << fmtTime(p.seconds);
    os << "</p>\n";
  }

  struct MemRow {
    std::string label;
    double weights, kvCache, act, capacity;
    std::string actName;
  };

  void memorySection(llvm::raw_ostream &os) {
    os << "<h2>Memory per device</h2>\n";
    double limit = num(&plan, "memory_limit_bytes");
    std::vector<MemRow> rows;
    if (pipe.present) {
      for (const Stage &s : pipe.list)
        if (s.hasMemory)
          rows.push_back({"stage " + std::to_string(s.index), s.weights,
                          s.kvCache, s.activations,
                          s.capacity > 0 ? s.capacity : limit, "activations"});
      if (rows.empty())
        notes(os, {"the pipeline's stages carry no memory_bytes"});
    } else if (functions) {
      for (const json::Value &v : *functions) {
        const json::Object *f = v.getAsObject();
        const json::Object *m =
            f ? f->getObject("memory_per_device_bytes") : nullptr;
        if (m)
          rows.push_back({"stage 0 \xC2\xB7 @" + str(f, "name"),
                          num(m, "weights"), num(m, "kv_cache"),
                          num(m, "inputs"), limit, "inputs"});
      }
    }
    if (rows.size() > kMaxRows)
      rows.resize(kMaxRows);
    os << "<p class=\"legend\"><span class=\"sw w\"></span> weights "
          "<span class=\"sw kv\"></span> KV cache <span class=\"sw act\">"
          "</span> "
       << (pipe.present ? "activations (in-flight microbatches)"
                        : "inputs (the planner does not count activations "
                          "without a pipeline)")
       << " <span class=\"sw free\"></span> free, up to the capacity. The "
          "thin bar under each shows the split of what is used.</p>\n";
    constexpr double rowH = 34;
    double plotW = kFigWidth - kLabelWidth - 250;
    double h = rows.size() * rowH + 4;
    os << "<svg class=\"memory\" viewBox=\"0 0 " << px(kFigWidth) << " "
       << px(h) << "\" width=\"" << px(kFigWidth) << "\" height=\"" << px(h)
       << "\" role=\"img\">\n";
    for (auto [i, r] : llvm::enumerate(rows)) {
      double y = i * rowH + 2, used = r.weights + r.kvCache + r.act;
      double full = std::max({r.capacity, used, 1.0});
      double scale = plotW / full;
      os << "<text x=\"" << px(kLabelWidth - 8) << "\" y=\"" << px(y + 14)
         << "\" text-anchor=\"end\">" << esc(r.label) << "</text>";
      os << "<rect x=\"" << px(kLabelWidth) << "\" y=\"" << px(y)
         << "\" width=\"" << px(r.capacity * scale)
         << "\" height=\"18\" fill=\"#fff\" stroke=\"#999\"><title>capacity "
         << fmtBytes(r.capacity) << "</title></rect>";
      struct Seg {
        double bytes;
        const char *colour, *name;
      } segs[] = {
          {r.weights, "#4a7bd0", "weights"},
          {r.kvCache, "#e8923a", "KV cache"},
          {r.act, "#4caf6a", r.actName == "inputs" ? "inputs" : "activations"}};
      double x = kLabelWidth, xs = kLabelWidth;
      for (const Seg &s : segs) {
        if (!(s.bytes > 0))
          continue;
        double w = std::max(1.0, s.bytes * scale);
        double ws = used > 0 ? s.bytes / used * plotW : 0;
        std::string tip = std::string(s.name) + ": " + fmtBytes(s.bytes);
        os << "<rect x=\"" << px(x) << "\" y=\"" << px(y + 1) << "\" width=\""
           << px(w) << "\" height=\"16\" fill=\"" << s.colour << "\"><title>"
           << esc(tip) << "</title></rect>";
        os << "<rect x=\"" << px(xs) << "\" y=\"" << px(y + 21) << "\" width=\""
           << px(ws) << "\" height=\"5\" fill=\"" << s.colour << "\"><title>"
           << esc(tip) << "</title></rect>";
        x += w, xs += ws;
      }
      bool over = used > r.capacity;
      std::string text = fmtBytes(used) + " of " + fmtBytes(r.capacity) + " (" +
                         (r.capacity > 0 ? fmtPct(used / r.capacity) : "?") +
                         ")" + (over ? " over capacity" : "");
      os << "<text x=\"" << px(kLabelWidth + plotW + 8) << "\" y=\""
         << px(y + 14) << "\"" << (over ? " fill=\"#c0392b\"" : "") << ">"
         << esc(text) << "</text>\n";
    }
    os << "</svg>\n<table><tr><th></th><th>weights</th><th>KV cache</th><th>"
       << (pipe.present ? "activations" : "inputs")
       << "</th><th>total</th><th>capacity</th></tr>\n";
    for (const MemRow &r : rows)
      os << "<tr><td>" << esc(r.label) << "</td><td class=\"n\">"
         << fmtBytes(r.weights) << "</td><td class=\"n\">"
         << fmtBytes(r.kvCache) << "</td><td class=\"n\">" << fmtBytes(r.act)
         << "</td><td class=\"n\">" << fmtBytes(r.weights + r.kvCache + r.act)
         << "</td><td class=\"n\">" << fmtBytes(r.capacity) << "</td></tr>\n";
    os << "</table>\n";
  }

  void scheduleSection(llvm::raw_ostream &os) {
    os << "<h2>Predicted schedule</h2>\n";
    int64_t p = pipe.stages, m = pipe.microbatches;
    double T = pipe.stageTime;
    if (pipe.present)
      os << "<p class=\"big\">" << esc(pipe.schedule) << ": stage <i>k</i> "
         << "runs microbatch <i>j</i> at (<i>j</i> + <i>k</i>) &times; "
         << fmtTime(T)
         << " (the slowest stage). Predicted bubble (p-1)/(m+p-1) = " << (p - 1)
         << "/" << (m + p - 1) << " = <b>" << fmtPct(pipe.bubble)
         << "</b>; step (m+p-1) &times; " << fmtTime(T) << " + p2p "
         << fmtTime(pipe.p2pTime) << " = <b>" << fmtTime(pipe.step())
         << "</b>.</p>\n";
    else
      os << "<p class=\"big\">One stage, one microbatch: predicted bubble "
            "<b>0%</b>; step <b>"
         << fmtTime(T) << "</b> (@"
         << esc(functions && !functions->empty()
                    ? str((*functions)[0].getAsObject(), "name")
                    : "?")
         << ").</p>\n";
    std::map<int64_t, double> p2pFrom;
    for (const P2p &x : pipe.p2p)
      p2pFrom[x.from] += x.seconds;
    std::vector<Row> rows;
    size_t shownRows = std::min(pipe.list.size(), kMaxRows);
    // Too many microbatches to draw one by one: the first ones are drawn.
    int64_t drawnM = std::min<int64_t>(
        m, std::max<int64_t>(
               1, int64_t(kMaxBlocks / std::max<size_t>(shownRows, 1))));
    for (auto [k, s] :
         llvm::enumerate(ArrayRef<Stage>(pipe.list).take_front(shownRows))) {
      Row r;
      r.label = "stage " + std::to_string(s.index);
      std::string ranks = stageRanks(s.index);
      if (!ranks.empty())
        r.label += " (" + ranks + ")";
      if (r.label.size() > 28)
        r.label = "stage " + std::to_string(s.index);
      r.tip = "stage " + std::to_string(s.index) + ": ";
      // One stage: its collectives at the end of the step (the plan
      // predicts their total, not where they fall).
      if (!pipe.present && functions && !functions->empty()) {
        const json::Object *f = (*functions)[0].getAsObject();
        double comm = num(f, "communication_time_s");
        if (comm > 0)
          r.marks.push_back({std::max(0.0, s.seconds - comm), comm, false,
                             "collectives: " + fmtTime(comm) + " in all"});
      }
      for (int64_t j = 0; j < drawnM; ++j) {
        double start = double(j + int64_t(k)) * T;
        r.blocks.push_back({start, s.seconds, j,
                            "stage " + std::to_string(s.index) +
                                ", microbatch " + std::to_string(j) + ": " +
                                fmtTime(s.seconds) + " from " +
                                fmtTime(start)});
        if (double d = p2pFrom[s.index]; d > 0 && k + 1 < pipe.list.size())
          r.marks.push_back({start + s.seconds, d, true,
                             "send to stage " + std::to_string(s.index + 1) +
                                 ": " + fmtTime(d)});
      }
      rows.push_back(r);
    }
    drawTimeline(os, "predicted", rows, std::max(pipe.step(), 1e-12));
    if (drawnM < m)
      notes(os, {"the first " + std::to_string(drawnM) + " of " +
                 std::to_string(m) + " microbatches are drawn"});
    drawLegend(os, std::min(drawnM, m), true);
  }

  void measuredSection(llvm::raw_ostream &os) {
    os << "<h2>Measured schedule (trace)</h2>\n";
    Measured meas = readTrace(*trace);
    notes(os, meas.notes);
    if (meas.rows.empty())
      return;
    os << "<p class=\"big\">Measured bubble <b>" << fmtPct(meas.bubbleShown)
       << "</b> in the step drawn (step " << meas.shownStep + 1 << " of "
       << meas.steps << ", " << fmtTime(meas.span) << ")";
    if (meas.steps > 1)
      os << "; mean over the " << meas.steps << " steps "
         << fmtPct(meas.bubbleMean);
    os << ". Predicted " << fmtPct(pipe.bubble) << ", step "
       << fmtTime(pipe.step());
    if (pipe.step() > 0)
      os << " (the measured step is " << fmt("%.3g", meas.span / pipe.step())
         << "&times; the predicted)";
    os << ".</p>\n<p class=\"muted\">Bubble: 1 - the "
       << "ranks' mean busy time (their stage calls) / the step's span; a "
          "step begins where stage 0 starts microbatch 0.</p>\n";
    drawTimeline(os, "measured", meas.rows, meas.span);
    drawLegend(os, std::max<int64_t>(meas.microbatches, 1), true);
  }

  void functionsSection(llvm::raw_ostream &os) {
    os << "<h2>Functions and collectives</h2>\n";
    if (!functions)
      return;
    for (const json::Value &v : *functions) {
      const json::Object *f = v.getAsObject();
      if (!f)
        continue;
      const json::Object *m = f->getObject("memory_per_device_bytes");
      const json::Array *ops = f->getArray("ops");
      os << "<h3>@" << esc(str(f, "name")) << "</h3>\n<p>"
         << (ops ? std::to_string(ops->size()) + " ops, " : "") << "predicted "
         << fmtTime(num(f, "predicted_step_time_s")) << " (compute "
         << fmtTime(num(f, "compute_time_s")) << ", communication "
         << fmtTime(num(f, "communication_time_s")) << "); memory per device "
         << fmtBytes(num(m, "total")) << " (weights "
         << fmtBytes(num(m, "weights")) << ", KV cache "
         << fmtBytes(num(m, "kv_cache")) << ", unsplit "
         << fmtBytes(num(m, "unsplit")) << ")</p>\n";
      // Grouped as the summary of --emit=plan groups them.
      std::map<std::string, std::pair<int64_t, double>> byKind;
      if (const json::Array *cs = f->getArray("collectives"))
        for (const json::Value &cv : *cs) {
          const json::Object *c = cv.getAsObject();
          if (!c)
            continue;
          std::string key = str(c, "kind") + " on {";
          if (const json::Array *axes = c->getArray("axes"))
            for (auto [i, a] : llvm::enumerate(*axes)) {
              if (i)
                key += ",";
              key += a.getAsString().value_or("?");
            }
          key += "}";
          byKind[key].first++;
          byKind[key].second += num(c, "time_s");
        }
      if (byKind.empty()) {
        os << "<p class=\"muted\">no collectives</p>\n";
        continue;
      }
      os << "<table><tr><th>collective</th><th>count</th><th>predicted "
            "time</th></tr>\n";
      for (auto &[k, c] : byKind)
        os << "<tr><td>" << esc(k) << "</td><td class=\"n\">" << c.first
           << "</td><td class=\"n\">" << fmtTime(c.second) << "</td></tr>\n";
      os << "</table>\n";
    }
  }

  const json::Object &plan;
  const std::optional<json::Value> &trace;
  const json::Array *functions;
  Mesh mesh;
  Pipeline pipe;
  int ppAxis = -1;
};

} // namespace

bool isPlanJson(const json::Value &v) {
  const json::Object *o = v.getAsObject();
  return o && o->getArray("functions");
}

std::string renderPlanHtml(const json::Value &plan,
                           const std::optional<json::Value> &trace) {
  static const json::Object empty;
  const json::Object *o = plan.getAsObject();
  return Page(o ? *o : empty, trace).render();
}

bool readTraceFiles(StringRef path, json::Value &out, std::string &error) {
  std::vector<std::string> files;
  if (llvm::sys::fs::exists(path)) {
    files.push_back(path.str());
  } else {
    // loom-run --trace under MPI: one file per rank.
    for (int r = 0; llvm::sys::fs::exists(path + "." + std::to_string(r)); ++r)
      files.push_back((path + "." + std::to_string(r)).str());
    if (files.empty()) {
      error = "cannot read '" + path.str() + "' (nor '" + path.str() +
              ".0', the first of the per-rank files loom-run --trace writes "
              "under MPI)";
      return false;
    }
  }
  json::Array events;
  for (const std::string &file : files) {
    auto buffer = llvm::MemoryBuffer::getFile(file, /*IsText=*/true);
    if (!buffer) {
      error = "cannot read '" + file + "': " + buffer.getError().message();
      return false;
    }
    llvm::Expected<json::Value> v = json::parse((*buffer)->getBuffer());
    if (!v) {
      error = "'" + file + "' is not JSON (" + llvm::toString(v.takeError()) +
              "); give the Chrome trace that loom-run --trace writes";
      return false;
    }
    json::Array *list = v->getAsArray();
    if (json::Object *o = v->getAsObject())
      list = o->getArray("traceEvents");
    if (!list) {
      error = "'" + file +
              "' is not a Chrome trace (expected "
              "{\"traceEvents\": [...]} or an array of events)";
      return false;
    }
    for (json::Value &e : *list)
      events.push_back(std::move(e));
  }
  out = json::Object{{"traceEvents", std::move(events)}};
  return true;
}

} // namespace loom::driver
