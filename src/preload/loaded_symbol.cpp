// The GNU hash table's layout and lookup as the dynamic linker uses them (glibc elf/dl-lookup.c):
// a Bloom filter that rejects most absent names with one word, then the hash's bucket chain.
#include "loaded_symbol.hpp"

#include <link.h>
#include <stdint.h>
#include <string.h>

namespace ophook::preload {
namespace {

struct Search {
  const char* name;
  uint32_t hash;
  SymbolPresence presence;
};

uint32_t gnu_hash(const char* name) {
  uint32_t hash = 5381;
  for (const char* c = name; *c != '\0'; ++c) hash = hash * 33 + static_cast<unsigned char>(*c);
  return hash;
}

/// glibc rewrites the addresses in an object's dynamic section in place once it has loaded it;
/// the vDSO's (read-only) stay offsets from its base.
template <typename T>
const T* dynamic_address(ElfW(Addr) base, ElfW(Addr) value) {
  return reinterpret_cast<const T*>(value < base ? base + value : value);  // NOLINT(performance-no-int-to-ptr)
}

struct DynamicTables {
  const uint32_t* gnu_hash = nullptr;
  const ElfW(Sym)* symbols = nullptr;
  const char* strings = nullptr;
};

bool read_dynamic_tables(const dl_phdr_info& object, DynamicTables& tables) {
  for (int i = 0; i < object.dlpi_phnum; ++i) {
    const ElfW(Phdr)& header = object.dlpi_phdr[i];
    if (header.p_type != PT_DYNAMIC) continue;
    const auto* entry = reinterpret_cast<const ElfW(Dyn)*>(object.dlpi_addr + header.p_vaddr);  // NOLINT(performance-no-int-to-ptr)
    for (; entry->d_tag != DT_NULL; ++entry) {
      if (entry->d_tag == DT_GNU_HASH) tables.gnu_hash = dynamic_address<uint32_t>(object.dlpi_addr, entry->d_un.d_ptr);
      if (entry->d_tag == DT_SYMTAB) tables.symbols = dynamic_address<ElfW(Sym)>(object.dlpi_addr, entry->d_un.d_ptr);
      if (entry->d_tag == DT_STRTAB) tables.strings = dynamic_address<char>(object.dlpi_addr, entry->d_un.d_ptr);
    }
    return true;
  }
  return false;  // no dynamic section: nothing exported
}

bool defines(const DynamicTables& tables, const Search& search) {
  const uint32_t* table = tables.gnu_hash;
  const uint32_t bucket_count = table[0], first_hashed = table[1], bloom_words = table[2], bloom_shift = table[3];
  if (bucket_count == 0 || bloom_words == 0) return false;
  constexpr uint32_t kWordBits = sizeof(ElfW(Addr)) * 8;
  const auto* bloom = reinterpret_cast<const ElfW(Addr)*>(table + 4);
  const ElfW(Addr) word = bloom[(search.hash / kWordBits) % bloom_words];
  const ElfW(Addr) mask = (ElfW(Addr){1} << (search.hash % kWordBits)) |
                          (ElfW(Addr){1} << ((search.hash >> bloom_shift) % kWordBits));
  if ((word & mask) != mask) return false;
  const auto* buckets = reinterpret_cast<const uint32_t*>(bloom + bloom_words);
  const uint32_t* chain = buckets + bucket_count;
  for (uint32_t index = buckets[search.hash % bucket_count]; index >= first_hashed; ++index) {
    const uint32_t chained = chain[index - first_hashed];
    const ElfW(Sym)& symbol = tables.symbols[index];
    if ((chained | 1) == (search.hash | 1) && symbol.st_shndx != SHN_UNDEF &&
        strcmp(tables.strings + symbol.st_name, search.name) == 0) {
      return true;
    }
    if ((chained & 1) != 0) break;  // the chain's last entry
  }
  return false;
}

int visit_object(dl_phdr_info* object, size_t /*size*/, void* data) {
  auto& search = *static_cast<Search*>(data);
  DynamicTables tables;
  if (!read_dynamic_tables(*object, tables)) return 0;
  if (tables.gnu_hash == nullptr || tables.symbols == nullptr || tables.strings == nullptr) {
    search.presence = SymbolPresence::unknown;
    return 0;
  }
  if (!defines(tables, search)) return 0;
  search.presence = SymbolPresence::present;
  return 1;  // stop
}

}  // namespace

SymbolPresence loaded_symbol_presence(const char* name) noexcept {
  Search search{name, gnu_hash(name), SymbolPresence::absent};
  dl_iterate_phdr(&visit_object, &search);
  return search.presence;
}

}  // namespace ophook::preload
