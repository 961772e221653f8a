#pragma once

/// Marks the core API that libophook_core.so exports to the _ophook extension module. Everything
/// else in the library is hidden, so the core the preload loads never interposes symbols (fmt, spdlog,
/// nlohmann) of the program or its other libraries.
#define OPHOOK_API __attribute__((visibility("default")))
