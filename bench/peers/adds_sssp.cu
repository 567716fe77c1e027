// mgapsp's driver for the ADDS peer (bench/peers/adds.sh builds it with the artifact's
// ads_int/ on the include path; no ADDS code is kept here).
//
//   adds_sssp GRAPH.gr SOURCES.txt TIMES.tsv ROWS.bin [--keep K]
//
// Reads the graph with the artifact's own .gr reader, copies it to the device once,
// then for each source sets the artifact's start_node and calls its gg_main, which
// runs the SSSP 8 times (RUN_LOOP) and appends "<graph> <mean ms> <work>" to file
// descriptor 3 (pointed here at TIMES.tsv).  The distances of the last of those runs
// (int32, unreached = INT32_MAX) of the first K sources (default: all) go to
// ROWS.bin.  The artifact's chatter goes to stdout.
#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <vector>

#define main adds_artifact_main
#include "kernel.cu"
#undef main

#include "peer_io.hxx"

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s GRAPH.gr SOURCES.txt TIMES.tsv ROWS.bin [--keep K]\n",
                 argv[0]);
    return 2;
  }
  long long keep = -1;
  for (int i = 5; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--keep") && i + 1 < argc)
      keep = std::atoll(argv[++i]);
    else
      peer_io::die(std::string("unknown argument ") + argv[i]);
  }
  // gg_main appends its per-source summary to /dev/fd/3
  int fd = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || dup2(fd, 3) < 0) peer_io::die(std::string("cannot open ") + argv[3]);
  if (fd != 3) close(fd);
  FILE* rows = std::fopen(argv[4], "wb");
  if (!rows) peer_io::die(std::string("cannot open ") + argv[4]);

  std::vector<char> path(argv[1], argv[1] + std::strlen(argv[1]) + 1);  // read() edits it
  cudaSetDevice(CUDA_DEVICE);
  CSRGraphTy g, gg;
  g.read(path.data());
  std::vector<long long> sources = peer_io::read_sources(argv[2], g.nnodes);
  if (keep < 0 || keep > (long long)sources.size()) keep = sources.size();
  g.copy_to_gpu(gg);

  std::vector<node_data_type> dist(g.nnodes);
  for (size_t i = 0; i < sources.size(); ++i) {
    start_node = (int)sources[i];
    gg_main(g, gg);
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) peer_io::die(std::string("CUDA: ") + cudaGetErrorString(err));
    if ((long long)i < keep) {
      cudaMemcpy(dist.data(), gg.node_data, g.nnodes * sizeof(node_data_type),
                 cudaMemcpyDeviceToHost);
      if (std::fwrite(dist.data(), sizeof(node_data_type), g.nnodes, rows) != g.nnodes)
        peer_io::die("short write of rows");
    }
    std::fprintf(stderr, "adds: source %lld done (%zu/%zu)\n", sources[i], i + 1,
                 sources.size());
  }
  std::fclose(rows);
  return 0;
}
