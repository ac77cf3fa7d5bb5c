// pld-info: prints pld's version, its backends and whether the shm heaps can get huge pages here;
// `--print-env` every environment variable it reads (name, type, default, current value,
// description); `--markdown` the table docs/environment.md embeds.
#include <pld/info.hpp>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>

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
    std::printf("backends: shm%s\n", pld::has_mpi_backend() ? ", mpi (Open MPI; chosen under mpirun)"
                                                            : " (mpi not built: Open MPI was not found)");
    std::printf("shm heaps: %s\n", pld::heap_pages().c_str());
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
