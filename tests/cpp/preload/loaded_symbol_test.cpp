// The stub decides whether a process is Python by reading the loaded objects' GNU hash tables
// instead of a dlsym that fails (and allocates) in every other process. Its answer must be the
// dynamic linker's: compared with dlsym over names from libc, libm, libgcc_s and libstdc++, and
// names nothing defines, Python's among them (no interpreter is loaded here).
#include "loaded_symbol.hpp"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/auxv.h>

namespace ophook::preload {
namespace {

const char* const kDefinedNames[] = {
    "malloc", "free", "dl_iterate_phdr", "pthread_create", "strcmp", "_exit",  // libc
    "cos", "_Unwind_Resume", "_ZSt4cout",  // libm, libgcc_s, libstdc++ (std::cout)
};

const char* const kUndefinedNames[] = {
    "PySys_AddAuditHook", "Py_IsInitialized", "ophook_no_such_symbol", "", "mallocx", "malloc_",
};

TEST(LoadedSymbolTest, AgreesWithDlsymOnDefinedNames) {
  for (const char* name : kDefinedNames) {
    ASSERT_NE(dlsym(RTLD_DEFAULT, name), nullptr) << name;
    EXPECT_EQ(loaded_symbol_presence(name), SymbolPresence::present) << name;
  }
}

TEST(LoadedSymbolTest, AgreesWithDlsymOnNamesNothingDefines) {
  for (const char* name : kUndefinedNames) {
    ASSERT_EQ(dlsym(RTLD_DEFAULT, name), nullptr) << name;
    EXPECT_EQ(loaded_symbol_presence(name), SymbolPresence::absent) << name;
  }
}

TEST(LoadedSymbolTest, ReadsTheVdsoWhoseTablesAreOffsets) {
  // The vDSO's dynamic section is read-only, so its addresses stay relative to its base; dlsym
  // does not search it, but dl_iterate_phdr lists it.
  if (getauxval(AT_SYSINFO_EHDR) == 0) GTEST_SKIP() << "no vDSO mapped";
  EXPECT_EQ(loaded_symbol_presence("__vdso_clock_gettime"), SymbolPresence::present);
  EXPECT_EQ(loaded_symbol_presence("__vdso_no_such_call"), SymbolPresence::absent);
}

}  // namespace
}  // namespace ophook::preload
