# Turns a text file into a C source defining `const char VAR[]`.
# Usage: cmake -DIN=file.sql -DOUT=file.c -DVAR=name -P embed.cmake
file(READ "${IN}" _text)
string(REPLACE "\\" "\\\\" _text "${_text}")
string(REPLACE "\"" "\\\"" _text "${_text}")
string(REPLACE "\n" "\\n\"\n\"" _text "${_text}")
file(WRITE "${OUT}" "/* Generated from ${IN}; do not edit. */\nconst char ${VAR}[] =\n\"${_text}\";\n")
