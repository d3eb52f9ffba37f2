# Run by `cmake --install` (install(CODE) in CMakeLists.txt): record in the installed Python
# package where the library and the command were installed, under the prefix in force at install
# time (`cmake --install --prefix` included). GD_PY_DIR, GD_LIB_FILE and GD_CLI_FILE are relative
# to the prefix.
set(_prefix "${CMAKE_INSTALL_PREFIX}")
set(_file "$ENV{DESTDIR}${_prefix}/${GD_PY_DIR}/graphdirect/_installed.py")
file(WRITE "${_file}"
     "# Written by `make install`: where it put libgraphdirect and the graphdirect command.\n"
     "LIBRARY = '${_prefix}/${GD_LIB_FILE}'\n"
     "CLI = '${_prefix}/${GD_CLI_FILE}'\n")
message(STATUS "Installing: ${_file}")
