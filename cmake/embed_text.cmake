# Turns a text file into a C++ header holding it as a raw string literal.
# Usage: cmake -DINPUT=file -DOUTPUT=header -P embed_text.cmake
file(READ ${INPUT} content)
get_filename_component(name ${INPUT} NAME)
file(WRITE ${OUTPUT}.tmp
  "// Generated from ${name} at build time; do not edit.\n#pragma once\n"
  "namespace ophook::preload {\ninline constexpr const char kEmbeddedBootstrap[] = R\"ophook_embed(${content})ophook_embed\";\n}\n")
file(COPY_FILE ${OUTPUT}.tmp ${OUTPUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUTPUT}.tmp)
