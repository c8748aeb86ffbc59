# Writes OUT: a C++ file holding every built-in target profile (PROFILES, ';'-separated JSON files) as
# a raw string (PROFILES is '|'-separated), so the binary needs no data files at run time. Run by the build (CMakeLists.txt).
set(body "// Generated from src/targets/profiles/*.json by embed_profiles.cmake. Do not edit.\n#include <string>\n#include <utility>\n#include <vector>\nnamespace ferry::targets {\nconst std::vector<std::pair<std::string, const char*>>& builtin_profiles() {\n  static const std::vector<std::pair<std::string, const char*>> k = {\n")
string(REPLACE "|" ";" profiles "${PROFILES}")
foreach(f ${profiles})
  get_filename_component(stem ${f} NAME_WE)
  file(READ ${f} text)
  string(APPEND body "      {\"${stem}\", R\"ferry_profile(${text})ferry_profile\"},\n")
endforeach()
string(APPEND body "  };\n  return k;\n}\n}  // namespace ferry::targets\n")
file(WRITE ${OUT} "${body}")
