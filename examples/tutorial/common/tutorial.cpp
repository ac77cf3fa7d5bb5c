// The command line every tutorial step shares (tutorial.hpp).
#include "tutorial.hpp"

#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>

namespace tutorial {

pld::DistributedConfig parse_devices(int argc, char** argv, const std::string& name, const std::string& description,
                                     const std::function<void(CLI::App&)>& more_options) {
  CLI::App app{description, name};
  std::vector<int> device_ids{0, 1};
  if (const int p = pld::launcher_world_size(); p > 0) {
    device_ids.resize(static_cast<std::size_t>(p));
    for (int r = 0; r < p; ++r) device_ids[static_cast<std::size_t>(r)] = r;
  }
  app.add_option("-d,--device", device_ids, "comma-separated device ids, one rank per id (e.g. 0,1,2,3)")
      ->delimiter(',')
      ->capture_default_str();
  if (more_options) more_options(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::exit(app.exit(e));
  }
  pld::DistributedConfig config{.device_ids = device_ids};
  try {
    config.validate();  // the same check pld::run makes, reported before anything starts
  } catch (const pld::Error& e) {
    std::fprintf(stderr, "%s: bad -d %s: %s\n", name.c_str(), fmt::format("{}", fmt::join(device_ids, ",")).c_str(),
                 e.what());
    std::exit(2);
  }
  if (const int p = pld::launcher_world_size(); p > 0 && p != config.world_size()) {
    std::fprintf(stderr,
                 "%s: -d lists %d devices but mpirun started %d processes (one rank each); omit -d under mpirun\n",
                 name.c_str(), config.world_size(), p);
    std::exit(2);
  }
  if (pld::is_output_rank())
    std::printf("%s: %d ranks on devices %s\n", name.c_str(), config.world_size(),
                fmt::format("{}", fmt::join(device_ids, ",")).c_str());
  return config;
}

}  // namespace tutorial
