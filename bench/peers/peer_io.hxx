// Input and output shared by the GPU peer drivers (gunrock_sssp.cu, adds_sssp.cu);
// mgapsp's own code, no peer code.
//
// Graph: Galois ".gr" version 1, the format ADDS reads natively and that
// bench/peers/gpu_peers.py writes: four little-endian u64 (version = 1, bytes per
// edge value = 4, n, m), then u64 row ends [n] (row i is [end[i-1], end[i])), u32
// targets [m], a u32 of padding when m is odd, u32 weights [m].
// Sources: a text file, one 0-based vertex a line.
// Rows:    raw little-endian values, one row of n per kept source, in source order.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace peer_io {

[[noreturn]] inline void die(const std::string& what) {
  std::fprintf(stderr, "peer: %s\n", what.c_str());
  std::exit(1);
}

struct gr_t {
  uint64_t n = 0, m = 0;
  std::vector<uint64_t> ends;     // n
  std::vector<uint32_t> targets;  // m
  std::vector<uint32_t> weights;  // m
};

inline gr_t read_gr(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) die("cannot open " + path);
  uint64_t head[4];
  if (std::fread(head, 8, 4, f) != 4) die("short header in " + path);
  if (head[0] != 1 || head[1] != 4) die(path + ": not a .gr v1 file with 4-byte weights");
  gr_t g;
  g.n = head[2];
  g.m = head[3];
  g.ends.resize(g.n);
  g.targets.resize(g.m);
  g.weights.resize(g.m);
  bool ok = std::fread(g.ends.data(), 8, g.n, f) == g.n &&
            std::fread(g.targets.data(), 4, g.m, f) == g.m;
  uint32_t pad;
  if (ok && (g.m & 1)) ok = std::fread(&pad, 4, 1, f) == 1;
  ok = ok && std::fread(g.weights.data(), 4, g.m, f) == g.m;
  std::fclose(f);
  if (!ok) die("short file " + path);
  if (g.n && g.ends.back() != g.m) die(path + ": row ends do not end at m");
  return g;
}

inline std::vector<long long> read_sources(const std::string& path, uint64_t n) {
  FILE* f = std::fopen(path.c_str(), "r");
  if (!f) die("cannot open " + path);
  std::vector<long long> s;
  long long v;
  while (std::fscanf(f, "%lld", &v) == 1) {
    if (v < 0 || (uint64_t)v >= n) die("source out of range in " + path);
    s.push_back(v);
  }
  std::fclose(f);
  if (s.empty()) die("no sources in " + path);
  return s;
}

}  // namespace peer_io
