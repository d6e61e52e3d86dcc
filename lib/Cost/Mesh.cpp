//===- Mesh.cpp - Device meshes and their links ---------------------------===//
//
// Part of the Loom project.
//
//===----------------------------------------------------------------------===//

#include "loom/Cost/Mesh.h"

#include <nlohmann/json.hpp>

#include <cctype>
#include <charconv>
#include <cstdio>

namespace loom::cost {

static constexpr double GB = 1e9, US = 1e-6;

static LinkSpec makeLink(std::string name, double gbps, double us, bool intra) {
  return LinkSpec{std::move(name), gbps * GB, us * US, intra};
}

Result<LinkSpec> linkByName(std::string_view name, const DeviceSpec &device) {
  if (name == "nvlink3")
    return makeLink("nvlink3", 300, 3, true);
  if (name == "nvlink4" || name == "nvlink")
    return makeLink("nvlink4", 450, 3, true);
  if (name == "ib-hdr")
    return makeLink("ib-hdr", 25, 5, false);
  if (name == "ib-ndr" || name == "ib")
    return makeLink("ib-ndr", 50, 5, false);
  if (name == "pcie4")
    return makeLink("pcie4", 32, 5, true);
  if (name == "pcie5")
    return makeLink("pcie5", 64, 5, true);
  if (name == "ethernet")
    return makeLink("ethernet", 12.5, 20, false);
  if (name == "shm") {
    LinkSpec l = makeLink("shm", device.memBandwidth / 2 / GB, 1, true);
    return l;
  }
  std::string known;
  for (auto &n : knownLinkNames())
    known += (known.empty() ? "" : ", ") + n;
  return Error{"unknown link '" + std::string(name) + "' (known: " + known +
               ")"};
}

std::vector<std::string> knownLinkNames() {
  return {"nvlink3", "nvlink4", "ib-hdr", "ib-ndr",
          "pcie4",   "pcie5",   "shm",    "ethernet"};
}

LinkSpec defaultIntraNodeLink(const DeviceSpec &device) {
  if (device.kind == DeviceKind::CPU)
    return *linkByName("shm", device);
  if (device.name.rfind("a100", 0) == 0)
    return *linkByName("nvlink3", device);
  return *linkByName("nvlink4", device);
}

LinkSpec defaultInterNodeLink(const DeviceSpec &device) {
  if (device.kind == DeviceKind::CPU)
    return *linkByName("ethernet", device);
  if (device.name.rfind("a100", 0) == 0)
    return *linkByName("ib-hdr", device);
  return *linkByName("ib-ndr", device);
}

int64_t MeshSpec::numDevices() const {
  int64_t n = 1;
  for (auto &a : axes)
    n *= a.size;
  return n;
}

const MeshAxis *MeshSpec::axis(std::string_view name) const {
  for (auto &a : axes)
    if (a.name == name)
      return &a;
  return nullptr;
}

int64_t MeshSpec::axisSize(std::string_view name) const {
  const MeshAxis *a = axis(name);
  return a ? a->size : 1;
}

static bool validAxisName(std::string_view s) {
  if (s.empty())
    return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_'))
      return false;
  return !std::isdigit(static_cast<unsigned char>(s[0]));
}

static std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b])))
    ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1])))
    --e;
  return std::string(s.substr(b, e - b));
}

/// Assigns default links from the innermost axis outwards.
static void assignDefaultLinks(MeshSpec &mesh,
                               std::vector<bool> &explicitLink) {
  LinkSpec intra = defaultIntraNodeLink(mesh.device);
  LinkSpec inter = defaultInterNodeLink(mesh.device);
  int64_t inner = 1;
  for (size_t i = mesh.axes.size(); i-- > 0;) {
    inner *= mesh.axes[i].size;
    if (explicitLink[i])
      continue;
    mesh.axes[i].link = inner <= mesh.devicesPerNode ? intra : inter;
  }
}

static Result<MeshSpec> checkDuplicates(MeshSpec mesh) {
  for (size_t i = 0; i < mesh.axes.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (mesh.axes[i].name == mesh.axes[j].name)
        return Error{"mesh spec: axis " + std::to_string(i + 1) + " ('" +
                     mesh.axes[i].name + "'): name repeats axis " +
                     std::to_string(j + 1)};
  return mesh;
}

Result<MeshSpec> parseMeshSpec(std::string_view spec, const DeviceSpec &device,
                               int64_t devicesPerNode) {
  MeshSpec mesh;
  mesh.device = device;
  mesh.devicesPerNode = devicesPerNode > 0
                            ? devicesPerNode
                            : (device.kind == DeviceKind::CPU ? 1 << 30 : 8);
  if (trim(spec).empty())
    return Error{"mesh spec: empty (expected e.g. 'dp=2,tp=4')"};
  size_t pos = 0;
  int index = 0;
  while (pos <= spec.size()) {
    size_t comma = spec.find(',', pos);
    if (comma == std::string_view::npos)
      comma = spec.size();
    std::string item = trim(spec.substr(pos, comma - pos));
    ++index;
    std::string where = "mesh spec: axis " + std::to_string(index);
    if (item.empty())
      return Error{where + ": empty (expected name=size)"};
    size_t eq = item.find('=');
    if (eq == std::string::npos)
      return Error{where + " ('" + item + "'): expected name=size"};
    std::string name = trim(item.substr(0, eq));
    std::string size = trim(item.substr(eq + 1));
    if (!validAxisName(name))
      return Error{where + ": name '" + name +
                   "' is not an identifier ([A-Za-z_][A-Za-z0-9_]*)"};
    int64_t n = 0;
    auto [p, ec] = std::from_chars(size.data(), size.data() + size.size(), n);
    if (ec != std::errc() || p != size.data() + size.size() || n <= 0)
      return Error{where + " ('" + name + "'): size '" + size +
                   "' is not a positive integer"};
    mesh.axes.push_back(MeshAxis{name, n, {}});
    pos = comma + 1;
  }
  std::vector<bool> explicitLink(mesh.axes.size(), false);
  assignDefaultLinks(mesh, explicitLink);
  return checkDuplicates(std::move(mesh));
}

using json = nlohmann::json;

static Result<double> number(const json &obj, const char *key,
                             const std::string &where, bool required,
                             double dflt = 0) {
  auto it = obj.find(key);
  if (it == obj.end()) {
    if (required)
      return Error{where + ": missing field '" + key + "'"};
    return dflt;
  }
  if (!it->is_number())
    return Error{where + ": field '" + key + "' must be a number"};
  double v = it->get<double>();
  if (!(v > 0))
    return Error{where + ": field '" + key + "' must be positive"};
  return v;
}

static Result<DeviceSpec> parseDevice(const json &j) {
  if (j.is_string())
    return deviceByName(j.get<std::string>());
  if (!j.is_object())
    return Error{"mesh spec: field 'device' must be a name or an object"};
  std::string where = "mesh spec: device";
  DeviceSpec d;
  auto base = j.find("base");
  if (base != j.end()) {
    if (!base->is_string())
      return Error{where + ": field 'base' must be a device name"};
    auto b = deviceByName(base->get<std::string>());
    if (!b)
      return Error{where + ": field 'base': " + b.error().message};
    d = *b;
  }
  if (auto n = j.find("name"); n != j.end()) {
    if (!n->is_string())
      return Error{where + ": field 'name' must be a string"};
    d.name = n->get<std::string>();
  }
  if (auto k = j.find("kind"); k != j.end()) {
    if (!k->is_string() || (*k != "gpu" && *k != "cpu"))
      return Error{where + ": field 'kind' must be \"gpu\" or \"cpu\""};
    d.kind = *k == "cpu" ? DeviceKind::CPU : DeviceKind::GPU;
  }
  bool haveBase = base != j.end();
  if (auto p = j.find("peak_tflops"); p != j.end()) {
    if (!p->is_object())
      return Error{where + ": field 'peak_tflops' must be an object "
                           "{\"f32\", \"tf32\", \"bf16\", \"fp8\"}"};
    for (auto &[key, val] : p->items()) {
      if (!val.is_number() || !(val.get<double>() > 0))
        return Error{where + ": field 'peak_tflops." + key +
                     "' must be a positive number"};
      double v = val.get<double>() * 1e12;
      if (key == "f32" || key == "fp32")
        d.peakF32 = v;
      else if (key == "tf32")
        d.peakTF32 = v;
      else if (key == "bf16" || key == "f16" || key == "fp16")
        d.peakBF16 = v;
      else if (key == "fp8" || key == "int8")
        d.peakFP8 = v;
      else
        return Error{where + ": field 'peak_tflops." + key +
                     "' is not an element type (f32, tf32, bf16, fp8)"};
    }
  } else if (!haveBase) {
    return Error{where + ": missing field 'peak_tflops' (or 'base')"};
  }
  if (d.peakF32 <= 0 && d.peakTF32 <= 0 && d.peakBF16 <= 0)
    return Error{where + ": field 'peak_tflops' needs at least one of f32, "
                         "tf32, bf16"};
  auto bw =
      number(j, "mem_bandwidth_gbps", where, !haveBase, d.memBandwidth / GB);
  if (!bw)
    return bw.error();
  auto cap = number(j, "mem_capacity_gb", where, !haveBase, d.memCapacity / GB);
  if (!cap)
    return cap.error();
  d.memBandwidth = *bw * GB;
  d.memCapacity = *cap * GB;
  return d;
}

Result<MeshSpec> parseMeshJson(std::string_view text) {
  json j = json::parse(text.begin(), text.end(), nullptr,
                       /*allow_exceptions=*/false);
  if (j.is_discarded())
    return Error{"mesh spec: not valid JSON"};
  if (!j.is_object())
    return Error{"mesh spec: the top level must be an object"};
  MeshSpec mesh;
  auto dev = j.find("device");
  if (dev == j.end())
    return Error{"mesh spec: missing field 'device'"};
  auto d = parseDevice(*dev);
  if (!d) {
    if (d.error().message.rfind("mesh spec", 0) == 0)
      return d.error();
    return Error{"mesh spec: field 'device': " + d.error().message};
  }
  mesh.device = *d;
  mesh.devicesPerNode = mesh.device.kind == DeviceKind::CPU ? 1 << 30 : 8;
  if (auto n = j.find("devices_per_node"); n != j.end()) {
    if (!n->is_number_integer() || n->get<int64_t>() <= 0)
      return Error{"mesh spec: field 'devices_per_node' must be a positive "
                   "integer"};
    mesh.devicesPerNode = n->get<int64_t>();
  }
  auto axes = j.find("axes");
  if (axes == j.end())
    return Error{"mesh spec: missing field 'axes'"};
  if (!axes->is_array() || axes->empty())
    return Error{"mesh spec: field 'axes' must be a non-empty array"};
  std::vector<bool> explicitLink;
  int index = 0;
  for (auto &a : *axes) {
    ++index;
    std::string where = "mesh spec: axes[" + std::to_string(index - 1) + "]";
    if (!a.is_object())
      return Error{where +
                   ": must be an object {\"name\", \"size\", \"link\"}"};
    auto name = a.find("name");
    if (name == a.end())
      return Error{where + ": missing field 'name'"};
    if (!name->is_string() || !validAxisName(name->get<std::string>()))
      return Error{where + ": field 'name' must be an identifier"};
    where += " ('" + name->get<std::string>() + "')";
    auto size = a.find("size");
    if (size == a.end())
      return Error{where + ": missing field 'size'"};
    if (!size->is_number_integer() || size->get<int64_t>() <= 0)
      return Error{where + ": field 'size' must be a positive integer"};
    MeshAxis axis{name->get<std::string>(), size->get<int64_t>(), {}};
    bool has = false;
    if (auto l = a.find("link"); l != a.end()) {
      has = true;
      if (l->is_string()) {
        auto link = linkByName(l->get<std::string>(), mesh.device);
        if (!link)
          return Error{where + ": field 'link': " + link.error().message};
        axis.link = *link;
      } else if (l->is_object()) {
        std::string lw = where + ": link";
        auto bw = number(*l, "bandwidth_gbps", lw, true);
        if (!bw)
          return bw.error();
        auto lat = l->find("latency_us");
        if (lat == l->end())
          return Error{lw + ": missing field 'latency_us'"};
        if (!lat->is_number() || lat->get<double>() < 0)
          return Error{lw + ": field 'latency_us' must be a number >= 0"};
        axis.link.name = "custom";
        if (auto nm = l->find("name"); nm != l->end() && nm->is_string())
          axis.link.name = nm->get<std::string>();
        axis.link.bandwidth = *bw * GB;
        axis.link.latency = lat->get<double>() * US;
        axis.link.intraNode = true;
        if (auto in = l->find("intra_node"); in != l->end()) {
          if (!in->is_boolean())
            return Error{lw + ": field 'intra_node' must be true or false"};
          axis.link.intraNode = in->get<bool>();
        }
      } else {
        return Error{where + ": field 'link' must be a link name or an "
                             "object {\"bandwidth_gbps\", \"latency_us\"}"};
      }
    }
    mesh.axes.push_back(std::move(axis));
    explicitLink.push_back(has);
  }
  assignDefaultLinks(mesh, explicitLink);
  return checkDuplicates(std::move(mesh));
}

std::string describeMesh(const MeshSpec &mesh) {
  std::string s = mesh.device.name + ": ";
  for (size_t i = 0; i < mesh.axes.size(); ++i) {
    const MeshAxis &a = mesh.axes[i];
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s%s=%lld (%s %.1f GB/s, %.1f us)",
                  i ? " x " : "", a.name.c_str(), (long long)a.size,
                  a.link.name.c_str(), a.link.bandwidth / GB,
                  a.link.latency / US);
    s += buf;
  }
  return s;
}

} // namespace loom::cost
