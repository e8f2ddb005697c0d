# Writes an older version of a kubelet protocol from the newer one it equals but for its package
# (and, for DRA v1beta1, the one field v1 added): one source of truth for the messages, so that
# the two versions cannot drift apart. The descriptor test (kubelet_descriptors_test.cc) checks
# both against upstream's listings.
#
#   cmake -DIN=<newer.proto> -DOUT=<older.proto> -DFROM=<package> -DTO=<package>
#         [-DDROP_FIELD=<field name>] -P derive_version.cmake
#
# Each edit must match exactly once, or the newer file has changed shape and this fails.
file(READ "${IN}" text)

# (Matches are counted by position: a match holding ';' would split as a CMake list.)
set(package_line "\npackage ${FROM};\n")
string(FIND "${text}" "${package_line}" first)
string(FIND "${text}" "${package_line}" last REVERSE)
if(first EQUAL -1 OR NOT first EQUAL last)
  message(FATAL_ERROR "${IN}: expected one 'package ${FROM};' line")
endif()
string(REPLACE "${package_line}" "\npackage ${TO};\n" text "${text}")

if(DROP_FIELD)
  # The field's line and the comment lines right above it.
  set(field_line "(\n *//[^\n]*)*\n *[a-z0-9_. ]+ ${DROP_FIELD} = [0-9]+;")
  string(REGEX MATCHALL "\n *[a-z0-9_. ]+ ${DROP_FIELD} = [0-9]+" fields "${text}")
  list(LENGTH fields count)
  if(NOT count EQUAL 1)
    message(FATAL_ERROR "${IN}: expected one field '${DROP_FIELD}', found ${count}")
  endif()
  string(REGEX REPLACE "${field_line}" "" text "${text}")
endif()

get_filename_component(source "${IN}" NAME)
set(note "// Generated at build time from proto/${source} by proto/derive_version.cmake: package")
string(APPEND note " ${TO}")
if(DROP_FIELD)
  string(APPEND note ", without ${DROP_FIELD}")
endif()
file(WRITE "${OUT}" "${note}.\n${text}")
