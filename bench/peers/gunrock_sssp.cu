// mgapsp's driver for the Gunrock peer (bench/peers/gunrock.sh builds it against
// Gunrock's headers in .peers/gunrock/src; no Gunrock code is kept here).
//
//   gunrock_sssp_{f32,i32} GRAPH.gr SOURCES.txt TIMES.tsv ROWS.bin [--keep K] [--warmup W]
//
// Builds one Gunrock CSR graph on the device (directed, the .gr rows as given), then
// for each source calls gunrock::sssp::run (release 2.1.0's signature), as Gunrock's
// examples/algorithms/sssp does when asked for its SSSP rather than DAWN (a BFS-like
// method for unweighted graphs).  The advance's load balance is the enactor's own,
// block_mapped, fixed in that release.
// TIMES.tsv gets one line a source: source, the enactor's time (CUDA events around
// the frontier loop, what Gunrock reports), and the host wall time of the whole call
// (problem and frontier allocation, reset, loop, synchronised).  ROWS.bin gets the
// distance rows (PEER_WEIGHT_T, unreached = its max()) of the first K sources
// (default: all).  W untimed runs of the first source come first (default 1).
#include <gunrock/algorithms/sssp.hxx>

#include <chrono>
#include <cstring>
#include <limits>

#include "peer_io.hxx"

#ifndef PEER_WEIGHT_T
#define PEER_WEIGHT_T float
#endif

using namespace gunrock;
using namespace memory;

int main(int argc, char** argv) {
  using vertex_t = int;
  using edge_t = int;
  using weight_t = PEER_WEIGHT_T;

  if (argc < 5) {
    std::fprintf(stderr,
                 "usage: %s GRAPH.gr SOURCES.txt TIMES.tsv ROWS.bin [--keep K] "
                 "[--warmup W]\n", argv[0]);
    return 2;
  }
  long long keep = -1;
  int warmup = 1;
  for (int i = 5; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--keep") && i + 1 < argc) {
      keep = std::atoll(argv[++i]);
    } else if (!std::strcmp(argv[i], "--warmup") && i + 1 < argc) {
      warmup = std::atoi(argv[++i]);
    } else {
      peer_io::die(std::string("unknown argument ") + argv[i]);
    }
  }

  peer_io::gr_t gr = peer_io::read_gr(argv[1]);
  if (gr.n >= (uint64_t)std::numeric_limits<vertex_t>::max() ||
      gr.m >= (uint64_t)std::numeric_limits<edge_t>::max())
    peer_io::die("graph too large for 32-bit ids");
  const vertex_t n = (vertex_t)gr.n;
  const edge_t m = (edge_t)gr.m;
  std::vector<long long> sources = peer_io::read_sources(argv[2], gr.n);
  if (keep < 0 || keep > (long long)sources.size()) keep = sources.size();

  // host CSR in Gunrock's types, then the device CSR the graph views
  thrust::host_vector<edge_t> h_offsets(n + 1);
  thrust::host_vector<vertex_t> h_indices(m);
  thrust::host_vector<weight_t> h_values(m);
  h_offsets[0] = 0;
  for (vertex_t v = 0; v < n; ++v) h_offsets[v + 1] = (edge_t)gr.ends[v];
  for (edge_t e = 0; e < m; ++e) {
    h_indices[e] = (vertex_t)gr.targets[e];
    h_values[e] = (weight_t)gr.weights[e];  // integers: exact in int, and in float below 2^24
  }
  gr = peer_io::gr_t();

  format::csr_t<memory_space_t::device, vertex_t, edge_t, weight_t> csr(n, n, m);
  csr.row_offsets = h_offsets;
  csr.column_indices = h_indices;
  csr.nonzero_values = h_values;

  graph::graph_properties_t properties;
  properties.directed = true;
  properties.symmetric = false;
  properties.weighted = true;
  auto G = graph::build<memory_space_t::device>(properties, csr);

  thrust::device_vector<weight_t> distances(n);
  thrust::device_vector<vertex_t> predecessors(n);
  thrust::host_vector<weight_t> h_dist(n);

  // Each call makes its own context, as run()'s default argument and Gunrock's example
  // do: in 2.1.0 enact() copies the context's timer, and the copy's destructor destroys
  // the CUDA events both hold, so a context shared across calls crashes the second one.
  auto run_one = [&](vertex_t s, double* wall_ms) {
    cudaDeviceSynchronize();
    auto t0 = std::chrono::steady_clock::now();
    float ms = sssp::run(G, s, distances.data().get(), predecessors.data().get());
    cudaDeviceSynchronize();
    auto t1 = std::chrono::steady_clock::now();
    if (wall_ms) *wall_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    return ms;
  };

  for (int w = 0; w < warmup; ++w) run_one((vertex_t)sources[0], nullptr);

  FILE* times = std::fopen(argv[3], "w");
  FILE* rows = std::fopen(argv[4], "wb");
  if (!times || !rows) peer_io::die("cannot write the outputs");
  std::fprintf(times, "# gunrock sssp, weight %s, lb block_mapped, n %d, m %d\n# source\tenact_ms\twall_ms\n",
               sizeof(weight_t) == 4 && std::numeric_limits<weight_t>::is_integer ? "i32" : "f32",
               n, m);
  double total = 0;
  for (size_t i = 0; i < sources.size(); ++i) {
    double wall;
    float ms = run_one((vertex_t)sources[i], &wall);
    total += ms;
    std::fprintf(times, "%lld\t%.6f\t%.6f\n", sources[i], ms, wall);
    if ((long long)i < keep) {
      h_dist = distances;
      if (std::fwrite(h_dist.data(), sizeof(weight_t), n, rows) != (size_t)n)
        peer_io::die("short write of rows");
    }
  }
  std::fclose(times);
  std::fclose(rows);
  std::printf("gunrock sssp: %zu sources, n %d, m %d: %.3f ms enact in all\n",
              sources.size(), n, m, total);
  return 0;
}
