// fisrig-model: the model target. Runs a compiled program (firmware/core's VM, built
// natively) against the engine model and the simulated drive, and streams the run
// records to a file as they come, so a run killed half-way keeps what it took.
//
//   fisrig-model --program P.bin --records OUT.rec [--profile P] [--fault knob=value]...
//                [--progress-s N] [--quiet] [--data-in FILE] [--read-back] [--protocol sata|nvme]
//                [--capture FILE]
//
// --protocol nvme: the drive is the profile's SSD behind the simulated NVMe controller, and
// the engine the NVMe one (nvme_engine.h); sata (the default): the SATA drive and engine.
// --read-back: the program reads written data back into RAM (a verify pass): remember
// what every write carried (EngineModel::remember_write_styles).
// --data-in FILE: the bytes every data-in command returned (sector data, log pages,
// IDENTIFY), in completion order, for commands that completed without error: what
// `fisrig raw` shows of a read.
// --capture FILE: the analyzer's capture windows the program arms (capture.h): a 16-byte
// header (struct fisrig_capture_file_header), then struct fisrig_capture_entry after entry.
// The records file is a 16-byte header (struct fisrig_records_file_header) and then
// struct fisrig_run_record after struct fisrig_run_record. On exit one JSON line on
// stdout says how the run ended.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <memory>

#include "engine_model.h"
#include "nvme_engine.h"
#include "program_file.h"
#include "program_run.h"

using namespace fisrig;
using namespace fisrig::model::program_run;

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: fisrig-model --program P.bin --records OUT.rec [--profile P]\n"
               "                    [--fault knob=value]... [--progress-s N] [--quiet] [--data-in FILE] [--read-back]\n"
               "                    [--protocol sata|nvme] [--capture FILE]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string program_path, records_path, data_in_path, capture_path, profile = "consumer-256gb", protocol = "sata";
  std::vector<std::string> faults;
  bool read_back = false;
  Progress progress;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    try {
      if (a == "--program") program_path = value();
      else if (a == "--records") records_path = value();
      else if (a == "--profile") profile = value();
      else if (a == "--fault") faults.push_back(value());
      else if (a == "--progress-s") progress.every_s = std::stod(value());
      else if (a == "--quiet") progress.quiet = true;
      else if (a == "--data-in") data_in_path = value();
      else if (a == "--read-back") read_back = true;
      else if (a == "--protocol") protocol = value();
      else if (a == "--capture") capture_path = value();
      else return usage();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fisrig-model: %s\n", e.what());
      return 2;
    }
  }
  if (program_path.empty() || records_path.empty()) return usage();
  if (protocol != "sata" && protocol != "nvme") {
    std::fprintf(stderr, "fisrig-model: --protocol %s: expected sata or nvme\n", protocol.c_str());
    return 2;
  }

  model::ProgramFile program;
  if (!program.open(program_path)) {
    std::fprintf(stderr, "fisrig-model: cannot read %s\n", program_path.c_str());
    return 2;
  }

  drive::DriveConfig cfg;
  try {
    cfg = drive::load_profile(profile);
    for (const std::string& f : faults) {
      size_t eq = f.find('=');
      if (eq == std::string::npos) throw std::invalid_argument("--fault takes knob=value");
      cfg.faults.set(f.substr(0, eq), f.substr(eq + 1));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fisrig-model: %s\n", e.what());
    return 2;
  }

  int records_fd = open_records("fisrig-model", records_path);
  if (records_fd < 0) return 2;
  RecordFile out(records_fd);
  write_header(out);

  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  // The SATA drive and engine, or the NVMe controller's engine over the same SSD.
  std::unique_ptr<drive::Drive> d;
  std::unique_ptr<model::EngineModel> sata;
  std::unique_ptr<model::NvmeEngineModel> nvme;
  std::unique_ptr<fisrig_vm_nvme> nvme_state;
  try {
    if (protocol == "nvme") {
      nvme = std::make_unique<model::NvmeEngineModel>(cfg);
      nvme_state = std::make_unique<fisrig_vm_nvme>();
    } else {
      d = std::make_unique<drive::Drive>(cfg);
      sata = std::make_unique<model::EngineModel>(*d);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fisrig-model: %s\n", e.what());
    return 2;
  }
  std::FILE* data_in = nullptr;
  if (!data_in_path.empty()) {
    data_in = std::fopen(data_in_path.c_str(), "wb");
    if (!data_in) {
      std::fprintf(stderr, "fisrig-model: cannot write %s\n", data_in_path.c_str());
      return 2;
    }
    if (nvme) nvme->capture_data_in(data_in);
    else sata->capture_data_in(data_in);
  }
  std::FILE* capture = nullptr;
  if (!capture_path.empty()) {
    capture = std::fopen(capture_path.c_str(), "wb");
    const fisrig_capture_file_header h{FISRIG_CAPTURE_FILE_MAGIC, FISRIG_CAPTURE_FILE_VERSION,
                                       sizeof(fisrig_capture_entry), 0};
    if (!capture || std::fwrite(&h, sizeof h, 1, capture) != 1) {
      std::fprintf(stderr, "fisrig-model: cannot write %s\n", capture_path.c_str());
      return 2;
    }
    if (sata) sata->capture_wire_to(capture);  // the NVMe engine refuses a capture's arming
  }
  if (nvme) nvme->remember_write_styles(read_back);
  else sata->remember_write_styles(read_back);
  fisrig_engine_ops ops = nvme ? nvme->ops() : sata->ops();
  auto sim_ns = [&]() -> SimTimeNs { return nvme ? nvme->now_ns() : sata->now_ns(); };
  fisrig_vm vm;
  SinkCtx ctx{&out, &progress, sim_ns, &vm};
  fisrig_record_sink sink{&ctx, &emit, &place, &placed};
  fisrig_vm_init(&vm, &ops, &sink);
  if (nvme) fisrig_vm_nvme_init(&vm, nvme_state.get(), nvme->io_queues(), nvme->queue_entries());
  auto t0 = std::chrono::steady_clock::now();
  fisrig_vm_status st = fisrig_vm_run(&vm, program.data(), uint32_t(program.size()));
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!out.writer.close()) {
    // The file lacks records the run took: the run cannot end "done" on it.
    std::fprintf(stderr, "fisrig-model: cannot write %s: %s\n", records_path.c_str(),
                 std::strerror(out.writer.error()));
    if (st == FISRIG_VM_DONE) st = FISRIG_VM_RECORDS_LOST;
  }
  if (data_in) std::fclose(data_in);
  if (capture) {
    if (sata) sata->finish_capture();
    if (std::fclose(capture) != 0 || (sata && sata->wire_capture().write_failed())) {
      std::fprintf(stderr, "fisrig-model: cannot write %s\n", capture_path.c_str());
      if (st == FISRIG_VM_DONE) st = FISRIG_VM_RECORDS_LOST;
    }
  }

  print_outcome(st, out, vm, sim_ns(), wall);
  return st == FISRIG_VM_DONE ? 0 : 3;
}
