#include "debug/symbols.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

namespace pld::detail {

namespace {

struct Symbol {
  std::uint64_t start, size;
  std::string name;  // mangled
};

// The FUNC symbols of one object's .symtab, by start address relative to its load base (ET_DYN)
// or absolute (ET_EXEC, then `absolute` is set).
struct SymbolTable {
  std::vector<Symbol> symbols;
  bool absolute = false;
};

SymbolTable read_symtab(const char* path) {
  SymbolTable table;
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return table;
  struct stat st {};
  void* map = fstat(fd, &st) == 0 && st.st_size > static_cast<off_t>(sizeof(Elf64_Ehdr))
                  ? mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0)
                  : MAP_FAILED;
  close(fd);
  if (map == MAP_FAILED) return table;
  const auto* base = static_cast<const unsigned char*>(map);
  const auto size = static_cast<std::uint64_t>(st.st_size);
  const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(base);
  const bool elf64 = std::memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 && eh->e_ident[EI_CLASS] == ELFCLASS64;
  // Every range is checked as (offset <= size && length <= size - offset): no sum can wrap.
  auto inside = [size](std::uint64_t offset, std::uint64_t length) {
    return offset <= size && length <= size - offset;
  };
  if (elf64 && eh->e_shoff > 0 && eh->e_shentsize == sizeof(Elf64_Shdr) &&
      inside(eh->e_shoff, static_cast<std::uint64_t>(eh->e_shnum) * sizeof(Elf64_Shdr))) {
    table.absolute = eh->e_type == ET_EXEC;
    const auto* sh = reinterpret_cast<const Elf64_Shdr*>(base + eh->e_shoff);
    for (int i = 0; i < eh->e_shnum; ++i) {
      if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh->e_shnum || sh[i].sh_entsize != sizeof(Elf64_Sym))
        continue;
      const Elf64_Shdr& strs = sh[sh[i].sh_link];
      if (!inside(sh[i].sh_offset, sh[i].sh_size) || !inside(strs.sh_offset, strs.sh_size)) continue;
      const auto* syms = reinterpret_cast<const Elf64_Sym*>(base + sh[i].sh_offset);
      const char* names = reinterpret_cast<const char*>(base + strs.sh_offset);
      for (std::uint64_t k = 0; k < sh[i].sh_size / sizeof(Elf64_Sym); ++k) {
        const Elf64_Sym& s = syms[k];
        if (ELF64_ST_TYPE(s.st_info) != STT_FUNC || s.st_size == 0 || s.st_name >= strs.sh_size) continue;
        const char* name = names + s.st_name;
        table.symbols.push_back(
            Symbol{s.st_value, s.st_size, std::string(name, strnlen(name, strs.sh_size - s.st_name))});
      }
    }
    std::sort(table.symbols.begin(), table.symbols.end(),
              [](const Symbol& a, const Symbol& b) { return a.start < b.start; });
  }
  munmap(map, static_cast<std::size_t>(st.st_size));
  return table;
}

// Whether `address` lies in a loaded segment of the main program (the first object
// dl_iterate_phdr reports).
bool in_main_program(const void* address) {
  struct Query {
    std::uintptr_t at;
    bool found = false;
  } q{reinterpret_cast<std::uintptr_t>(address)};
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        auto* q = static_cast<Query*>(data);
        for (int k = 0; k < info->dlpi_phnum; ++k) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[k];
          const std::uintptr_t start = info->dlpi_addr + ph.p_vaddr;
          if (ph.p_type == PT_LOAD && q->at >= start && q->at < start + ph.p_memsz) q->found = true;
        }
        return 1;  // the main program only
      },
      &q);
  return q.found;
}

std::string demangle(const char* name) {
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = (status == 0 && d) ? d : name;
  std::free(d);
  return out;
}

}  // namespace

std::string function_name(const void* address) {
  Dl_info info{};
  if (!dladdr(address, &info)) return {};
  if (info.dli_sname) return demangle(info.dli_sname);
  if (!info.dli_fname || !info.dli_fbase) return {};
  static std::mutex mutex;
  static std::map<std::string, SymbolTable> tables;  // by object path, read once
  std::lock_guard lock(mutex);
  auto it = tables.find(info.dli_fname);
  if (it == tables.end()) {
    SymbolTable t = read_symtab(info.dli_fname);
    // The main program's name as dladdr gives it may be relative to a directory left since;
    // only the main program may be looked up as /proc/self/exe.
    if (t.symbols.empty() && in_main_program(address)) t = read_symtab("/proc/self/exe");
    it = tables.emplace(info.dli_fname, std::move(t)).first;
  }
  const SymbolTable& t = it->second;
  const auto at = reinterpret_cast<std::uintptr_t>(address);
  const std::uint64_t key = t.absolute ? at : at - reinterpret_cast<std::uintptr_t>(info.dli_fbase);
  auto s = std::upper_bound(t.symbols.begin(), t.symbols.end(), key,
                            [](std::uint64_t k, const Symbol& sym) { return k < sym.start; });
  if (s == t.symbols.begin()) return {};
  --s;
  return key < s->start + s->size ? demangle(s->name.c_str()) : std::string();
}

}  // namespace pld::detail
