// pld-info: prints pld's version, its backends and whether the shm heaps can get huge pages here;
// `--print-env` every environment variable it reads (name, type, default, current value,
// description); `--markdown` the table docs/environment.md embeds.
#include <pld/info.hpp>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace {

// The selected word of /sys/kernel/mm/transparent_hugepage/shmem_enabled, or "unknown".
std::string shmem_thp_mode() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/shmem_enabled");
  std::string line;
  if (!std::getline(f, line)) return "unknown";
  const auto lb = line.find('['), rb = line.find(']');
  return lb != std::string::npos && rb > lb ? line.substr(lb + 1, rb - lb - 1) : line;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"pld-info: version and environment variables of the pld runtime"};
  bool print_env = false, markdown = false;
  app.add_flag("--print-env", print_env, "list every environment variable with its current value");
  app.add_flag("--markdown", markdown, "print the variables as a Markdown table (for docs/environment.md)");
  CLI11_PARSE(app, argc, argv);

  if (markdown) {
    std::printf("| Variable | Type | Default | Description |\n|---|---|---|---|\n");
    for (const auto& s : pld::describe_settings())
      std::printf("| `%s` | %s | %s | %s |\n", s.name.c_str(), s.type.c_str(),
                  s.default_value.empty() ? "*(empty)*" : ("`" + s.default_value + "`").c_str(), s.description.c_str());
    return 0;
  }
  std::printf("pld %s\n", pld::version());
  if (!print_env) {
    std::printf("backends: shm%s\n",
                pld::has_mpi_backend() ? ", mpi (Open MPI; chosen under mpirun)" : " (mpi not built: Open MPI was not found)");
    std::string huge;  // PLD_HUGE_PAGES as set ("" = the default, 1)
    for (const auto& s : pld::describe_settings())
      if (s.name == "PLD_HUGE_PAGES") huge = s.value;
    const std::string mode = shmem_thp_mode();
    const bool granted = mode == "advise" || mode == "within_size" || mode == "always" || mode == "force";
    if (!huge.empty() && std::strtoll(huge.c_str(), nullptr, 10) == 0)
      std::printf("shm heaps: 4 KiB pages (PLD_HUGE_PAGES=0)\n");
    else
      std::printf("shm heaps: 2 MiB pages requested; the kernel's shmem THP mode is '%s', so they %s\n", mode.c_str(),
                  granted ? "are granted" : mode == "unknown" ? "may or may not be granted" : "stay 4 KiB pages");
    std::printf("(--print-env lists the environment variables)\n");
    return 0;
  }
  int width = 0;
  for (const auto& s : pld::describe_settings()) width = std::max(width, static_cast<int>(s.name.size()));
  for (const auto& s : pld::describe_settings())
    std::printf("%-*s %-8s default=%-6s current=%-8s %s\n", width, s.name.c_str(), s.type.c_str(),
                s.default_value.empty() ? "\"\"" : s.default_value.c_str(), s.value.empty() ? "(unset)" : s.value.c_str(),
                s.description.c_str());
  return 0;
}
