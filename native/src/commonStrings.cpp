// The three string helpers of llama.cpp's common/common.cpp that its JSON-schema converter
// (common/json-schema-to-grammar.cpp, common/json-schema.cpp) calls, with the same semantics. The rest
// of common.cpp (argument parsing, downloads, chat templates) is not part of the addon.
#include "common.h"

#include <sstream>
#include <string>
#include <vector>

std::string string_join(const std::vector<std::string>& values, const std::string& separator) {
    std::ostringstream result;
    for (size_t i = 0; i < values.size(); ++i) {
        if (i > 0) result << separator;
        result << values[i];
    }
    return result.str();
}

/** Splits at every occurrence of `delimiter`: n occurrences give n + 1 parts, empty ones included. */
std::vector<std::string> string_split(const std::string& str, const std::string& delimiter) {
    std::vector<std::string> parts;
    size_t start = 0;
    size_t end = str.find(delimiter);
    while (end != std::string::npos) {
        parts.push_back(str.substr(start, end - start));
        start = end + delimiter.length();
        end = str.find(delimiter, start);
    }
    parts.push_back(str.substr(start));
    return parts;
}

std::string string_repeat(const std::string& str, size_t n) {
    std::string result;
    result.reserve(str.length() * n);
    for (size_t i = 0; i < n; ++i) result += str;
    return result;
}
