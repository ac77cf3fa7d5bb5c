// gtest main for every pld test binary: after each test, no child process may be left (pld
// reaps every rank) and nothing named pld may be left in /dev/shm.
#include <gtest/gtest.h>

#include <dirent.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace {

std::string children() {
  std::string all;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      std::ifstream f(std::string("/proc/self/task/") + e->d_name + "/children");
      std::stringstream s;
      s << f.rdbuf();
      all += s.str();
    }
    closedir(d);
  }
  return all;
}

std::string shm_leftovers() {
  std::string all;
  if (DIR* d = opendir("/dev/shm")) {
    while (dirent* e = readdir(d))
      if (std::string(e->d_name).find("pld") != std::string::npos) all += std::string(e->d_name) + " ";
    closedir(d);
  }
  return all;
}

bool g_residue = false;

class ResidueCheck : public ::testing::EmptyTestEventListener {
  void OnTestEnd(const ::testing::TestInfo& info) override {
    const std::string kids = children(), shm = shm_leftovers();
    if (kids.empty() && shm.empty()) return;
    g_residue = true;
    std::fprintf(stderr, "RESIDUE after %s.%s: child processes [%s] /dev/shm [%s]\n", info.test_suite_name(),
                 info.name(), kids.c_str(), shm.c_str());
  }
};

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::UnitTest::GetInstance()->listeners().Append(new ResidueCheck);
  const int rc = RUN_ALL_TESTS();
  return (rc || g_residue) ? 1 : 0;
}
