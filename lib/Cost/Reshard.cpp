//===- Reshard.cpp - Layouts and the collectives that change them ---------===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//

#include "loom/Cost/Reshard.h"

#include <algorithm>

namespace loom::cost {

Layout Layout::replicated(unsigned rank) {
  Layout l;
  l.dims.resize(rank);
  return l;
}

bool Layout::isReplicated() const {
  return partial.empty() &&
         std::all_of(dims.begin(), dims.end(),
                     [](const std::vector<int> &d) { return d.empty(); });
}

int64_t Layout::parts(const std::vector<int64_t> &axisSizes) const {
  int64_t n = 1;
  for (const auto &d : dims)
    for (int a : d)
      n *= axisSizes[a];
  return n;
}

namespace {

bool contains(const std::vector<int> &v, int a) {
  return std::find(v.begin(), v.end(), a) != v.end();
}

/// Whether `prefix` starts `full`.
bool isPrefix(const std::vector<int> &prefix, const std::vector<int> &full) {
  return prefix.size() <= full.size() &&
         std::equal(prefix.begin(), prefix.end(), full.begin());
}

/// Whether one collective over `axes` enumerates its group in the listed
/// order: the runtime's groups follow mesh order (outermost axis major).
bool inMeshOrder(const std::vector<int> &axes) {
  return std::is_sorted(axes.begin(), axes.end());
}

/// Builds the steps while tracking the layout reached so far.
struct Builder {
  const Layout &dst;
  Layout cur;
  std::vector<ReshardStep> &steps;

  void add(ReshardStep::Kind kind, std::vector<int> axes, int64_t dim,
           int64_t concatDim, const Layout &buffer) {
    ReshardStep s{kind, std::move(axes), dim, concatDim, {}, buffer};
    steps.push_back(std::move(s));
  }

  /// (1) Sums the partial axes the target drops: reduce-scatters onto each
  /// dimension that the target extends by exactly (some of) them, then one
  /// all_reduce over the rest (on the smaller, scattered buffer).
  void reduce() {
    std::vector<int> pending;
    for (int a : cur.partial)
      if (!contains(dst.partial, a))
        pending.push_back(a);
    for (size_t d = 0; d < cur.dims.size() && !pending.empty(); ++d) {
      const std::vector<int> &want = dst.dims[d];
      if (want.size() <= cur.dims[d].size() || !isPrefix(cur.dims[d], want))
        continue;
      std::vector<int> added(want.begin() + cur.dims[d].size(), want.end());
      if (!std::all_of(added.begin(), added.end(),
                       [&](int a) { return contains(pending, a); }))
        continue;
      auto scatter = [&](std::vector<int> axes) {
        add(ReshardStep::ReduceScatter, axes, static_cast<int64_t>(d), -1, cur);
        for (int a : axes) {
          cur.dims[d].push_back(a);
          cur.partial.erase(
              std::find(cur.partial.begin(), cur.partial.end(), a));
        }
      };
      // Major axis first when the group order is not the listed order:
      // each scatter cuts within the block of the one before.
      if (inMeshOrder(added))
        scatter(added);
      else
        for (int a : added)
          scatter({a});
      for (int a : added)
        pending.erase(std::find(pending.begin(), pending.end(), a));
    }
    if (pending.empty())
      return;
    add(ReshardStep::AllReduce, pending, -1, -1, cur);
    for (int a : pending)
      cur.partial.erase(std::find(cur.partial.begin(), cur.partial.end(), a));
  }

  /// (2) Takes axes off every dimension whose split is not a prefix of the
  /// target's: all_to_all for an axis that another dimension takes next,
  /// all_gather for the rest.
  void regroup() {
    size_t rank = cur.dims.size();
    auto matches = [&](size_t d) { return isPrefix(cur.dims[d], dst.dims[d]); };
    while (true) {
      bool progress = false;
      for (size_t i = 0; i < rank && !progress; ++i) {
        if (matches(i))
          continue;
        int a = cur.dims[i].back();
        for (size_t j = 0; j < rank; ++j) {
          if (j == i || !matches(j) ||
              cur.dims[j].size() >= dst.dims[j].size() ||
              dst.dims[j][cur.dims[j].size()] != a)
            continue;
          add(ReshardStep::AllToAll, {a}, static_cast<int64_t>(j),
              static_cast<int64_t>(i), cur);
          cur.dims[i].pop_back();
          cur.dims[j].push_back(a);
          progress = true;
          break;
        }
      }
      if (progress)
        continue;
      for (size_t i = 0; i < rank && !progress; ++i) {
        if (matches(i))
          continue;
        size_t keep = 0;
        while (keep < cur.dims[i].size() && keep < dst.dims[i].size() &&
               cur.dims[i][keep] == dst.dims[i][keep])
          ++keep;
        std::vector<int> drop(cur.dims[i].begin() + keep, cur.dims[i].end());
        auto gather = [&](std::vector<int> axes) {
          cur.dims[i].resize(cur.dims[i].size() - axes.size());
          add(ReshardStep::AllGather, std::move(axes), static_cast<int64_t>(i),
              -1, cur);
        };
        // Minor axis first when the group order is not the listed order.
        if (inMeshOrder(drop))
          gather(drop);
        else
          for (auto it = drop.rbegin(); it != drop.rend(); ++it)
            gather({*it});
        progress = true;
      }
      if (!progress)
        break;
    }
  }

  /// (3) Cuts what the target newly splits: no communication.
  void slice() {
    ReshardStep s{ReshardStep::LocalSlice, {}, -1, -1, {}, dst};
    s.split.resize(cur.dims.size());
    bool any = false;
    for (size_t d = 0; d < cur.dims.size(); ++d)
      for (size_t k = cur.dims[d].size(); k < dst.dims[d].size(); ++k) {
        s.split[d].push_back(dst.dims[d][k]);
        any = true;
      }
    if (any)
      steps.push_back(std::move(s));
  }
};

} // namespace

bool planReshard(const Layout &src, const Layout &dst,
                 std::vector<ReshardStep> &steps, std::string &error) {
  steps.clear();
  if (src.dims.size() != dst.dims.size()) {
    error = "a reshard keeps the rank (" + std::to_string(src.dims.size()) +
            " vs " + std::to_string(dst.dims.size()) + ")";
    return false;
  }
  for (int a : dst.partial)
    if (!contains(src.partial, a)) {
      error = "the target holds partial sums over mesh axis #" +
              std::to_string(a) +
              " but the value does not; a reshard cannot create partial sums";
      return false;
    }
  Builder b{dst, src, steps};
  b.reduce();
  b.regroup();
  b.slice();
  return true;
}

const char *stepName(ReshardStep::Kind kind) {
  switch (kind) {
  case ReshardStep::AllReduce:
    return "all_reduce";
  case ReshardStep::ReduceScatter:
    return "reduce_scatter";
  case ReshardStep::AllGather:
    return "all_gather";
  case ReshardStep::AllToAll:
    return "all_to_all";
  case ReshardStep::LocalSlice:
    return "local_slice";
  }
  return "?";
}

bool stepCollective(ReshardStep::Kind kind, Collective &out) {
  switch (kind) {
  case ReshardStep::AllReduce:
    out = Collective::AllReduce;
    return true;
  case ReshardStep::ReduceScatter:
    out = Collective::ReduceScatter;
    return true;
  case ReshardStep::AllGather:
    out = Collective::AllGather;
    return true;
  case ReshardStep::AllToAll:
    out = Collective::AllToAll;
    return true;
  case ReshardStep::LocalSlice:
    return false;
  }
  return false;
}

double stepBytes(const ReshardStep &step, double globalBytes,
                 const std::vector<int64_t> &axisSizes) {
  if (step.kind == ReshardStep::LocalSlice)
    return 0;
  return globalBytes / static_cast<double>(step.buffer.parts(axisSizes));
}

double stepTime(const ReshardStep &step, double globalBytes,
                const std::vector<int64_t> &axisSizes,
                const std::vector<std::string> &axisNames, const MeshSpec &mesh,
                Algorithm algo) {
  Collective c;
  if (!stepCollective(step.kind, c))
    return 0;
  std::vector<std::string> names;
  for (int a : step.axes)
    names.push_back(axisNames[a]);
  return collectiveTimeOnAxes(c, stepBytes(step, globalBytes, axisSizes), mesh,
                              names, algo);
}

} // namespace loom::cost
