// pld-info: prints pld's version, its backends, whether the shm heaps can get huge pages here, the
// machine's caches and every size threshold pld derives from them (value and source: sysfs,
// cpuid, default, env or "tuning file <path>"); `--thresholds` the last two alone; `--print-env`
// every environment variable it reads (name, type, default, current value, description);
// `--markdown` the table docs/environment.md embeds.
#include <pld/error.hpp>
#include <pld/info.hpp>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>

namespace {

std::string human(std::uint64_t b) {
  if (b >= (1u << 20) && b % (1u << 20) == 0) return std::to_string(b >> 20) + " MiB";
  if (b >= (1u << 10) && b % (1u << 10) == 0) return std::to_string(b >> 10) + " KiB";
  return std::to_string(b) + " B";
}

void print_thresholds() {
  std::printf("machine: %s\n", pld::describe_machine().c_str());
  std::printf(
      "thresholds (each PLD_* variable overrides its value; unset or auto: the tuning file's (PLD_TUNING_FILE), "
      "else derived):\n");
  for (const auto& t : pld::describe_thresholds())
    std::printf("  %-26s %10s  %-7s %s\n", t.name.c_str(), human(t.bytes).c_str(), t.source.c_str(), t.rule.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"pld-info: version and environment variables of the pld runtime"};
  bool print_env = false, markdown = false, thresholds = false;
  app.add_flag("--print-env", print_env, "list every environment variable with its current value");
  app.add_flag("--markdown", markdown, "print the variables as a Markdown table (for docs/environment.md)");
  app.add_flag("--thresholds", thresholds, "print the machine's caches and the size thresholds derived from them");
  CLI11_PARSE(app, argc, argv);

  if (markdown) {
    std::printf("| Variable | Type | Default | Description |\n|---|---|---|---|\n");
    for (const auto& s : pld::describe_settings())
      std::printf("| `%s` | %s | %s | %s |\n", s.name.c_str(), s.type.c_str(),
                  s.default_value.empty() ? "*(empty)*" : ("`" + s.default_value + "`").c_str(), s.description.c_str());
    return 0;
  }
  if (thresholds) {
    try {
      print_thresholds();
    } catch (const pld::Error& e) {
      std::fprintf(stderr, "pld-info: %s\n", e.what());
      return 2;
    }
    return 0;
  }
  std::printf("pld %s\n", pld::version());
  if (!print_env) {
    std::printf("backends: shm%s\n", pld::has_mpi_backend() ? ", mpi (Open MPI; chosen under mpirun)"
                                                            : " (mpi not built: Open MPI was not found)");
    std::printf("shm heaps: %s\n", pld::heap_pages().c_str());
    try {
      print_thresholds();
    } catch (const pld::Error& e) {
      std::fprintf(stderr, "pld-info: %s\n", e.what());
      return 2;
    }
    std::printf("(--print-env lists the environment variables)\n");
    return 0;
  }
  int width = 0;
  for (const auto& s : pld::describe_settings()) width = std::max(width, static_cast<int>(s.name.size()));
  for (const auto& s : pld::describe_settings())
    std::printf("%-*s %-8s default=%-6s current=%-8s %s\n", width, s.name.c_str(), s.type.c_str(),
                s.default_value.empty() ? "\"\"" : s.default_value.c_str(),
                s.value.empty() ? "(unset)" : s.value.c_str(), s.description.c_str());
  return 0;
}
