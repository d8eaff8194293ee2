#include "conflux/core/json_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdint>

namespace conflux {

namespace {

// Deep enough for anything conflux writes; a bound, so that hostile nesting cannot overflow
// the stack of this recursive parser.
constexpr int kMaxDepth = 256;

class Parser {
 public:
  Parser(std::string_view text, std::string_view source) : text_(text), source_(source) {}

  JsonValue value(int depth = 0) {
    if (depth > kMaxDepth) fail("nesting deeper than {} levels", kMaxDepth);
    skip_space();
    const char c = peek("a value");
    if (c == '{') return object(depth);
    if (c == '[') return array(depth);
    if (c == '"') return JsonValue(string());
    if (c == '-' || (c >= '0' && c <= '9')) return JsonValue(number());
    if (literal("true")) return JsonValue(true);
    if (literal("false")) return JsonValue(false);
    if (literal("null")) return JsonValue(nullptr);
    fail("expected a value, found '{}'", c);
  }

  // The rest of the text holds only white space.
  void finish() {
    skip_space();
    if (pos_ < text_.size()) fail("expected the end after the value, found '{}'", text_[pos_]);
  }

  // Top level of scan_json_array: an object whose member `key` is streamed, or an array.
  std::size_t scan(std::string_view key, const std::function<void(JsonValue&&)>& on_element) {
    skip_space();
    const char c = peek("an object or an array");
    if (c == '[') return stream_array(on_element);
    if (c != '{') fail("expected an object or an array, found '{}'", c);
    ++pos_;
    std::size_t count = 0;
    if (close_or_first('}')) return count;
    do {
      skip_space();
      const std::string name = string();
      expect(':');
      if (name == key) {
        skip_space();
        if (peek("an array") != '[') fail("expected an array for \"{}\"", key);
        count += stream_array(on_element);
      } else {
        value(1);
      }
    } while (next_or_close('}'));
    return count;
  }

 private:
  template <typename... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> what, Args&&... args) const {
    raise(fmt::format(what, std::forward<Args>(args)...), false);
  }

  [[noreturn]] void raise(const std::string& what, bool truncated) const {
    const std::size_t at = std::min(pos_, text_.size());
    const auto line = 1 + std::count(text_.begin(), text_.begin() + at, '\n');
    const std::size_t line_start = text_.rfind('\n', at == 0 ? 0 : at - 1);
    const std::size_t column =
        at - (line_start == std::string_view::npos || at == 0 ? 0 : line_start + 1) + 1;
    throw JsonSyntaxError(fmt::format("{}: line {}, column {}: {}", source_, line, column, what),
                          truncated, __FILE__, __LINE__);
  }

  // The next character; a truncation error when the text ends where `expected` should be.
  char peek(std::string_view expected) const {
    if (pos_ >= text_.size())
      raise(fmt::format("the text ends where {} should be", expected), true);
    return text_[pos_];
  }

  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }

  void expect(char c) {
    skip_space();
    if (peek(fmt::format("'{}'", c)) != c) fail("expected '{}', found '{}'", c, text_[pos_]);
    ++pos_;
  }

  bool literal(std::string_view word) {
    const std::string_view rest = text_.substr(pos_);
    if (rest.starts_with(word)) {
      pos_ += word.size();
      return true;
    }
    // A prefix of the word at the very end: the file was cut inside it.
    if (word.starts_with(rest)) raise(fmt::format("the text ends inside '{}'", word), true);
    return false;
  }

  // After an opening bracket: true (and consumed) when `close` follows at once.
  bool close_or_first(char close) {
    skip_space();
    if (peek(fmt::format("a member or '{}'", close)) == close) {
      ++pos_;
      return true;
    }
    return false;
  }

  // After an element: true for ',' (another follows), false for `close`.
  bool next_or_close(char close) {
    skip_space();
    const char c = peek(fmt::format("',' or '{}'", close));
    ++pos_;
    if (c == ',') return true;
    if (c == close) return false;
    --pos_;
    fail("expected ',' or '{}', found '{}'", close, c);
  }

  JsonValue object(int depth) {
    ++pos_;
    JsonValue::Object members;
    if (close_or_first('}')) return JsonValue(std::move(members));
    do {
      skip_space();
      if (peek("a member name") != '"')
        fail("expected a member name in quotes, found '{}'", text_[pos_]);
      std::string name = string();
      expect(':');
      members.emplace_back(std::move(name), value(depth + 1));
    } while (next_or_close('}'));
    return JsonValue(std::move(members));
  }

  JsonValue array(int depth) {
    ++pos_;
    JsonValue::Array elements;
    if (close_or_first(']')) return JsonValue(std::move(elements));
    do {
      elements.push_back(value(depth + 1));
    } while (next_or_close(']'));
    return JsonValue(std::move(elements));
  }

  std::size_t stream_array(const std::function<void(JsonValue&&)>& on_element) {
    ++pos_;
    std::size_t count = 0;
    if (close_or_first(']')) return count;
    do {
      on_element(value(1));
      ++count;
    } while (next_or_close(']'));
    return count;
  }

  // JSON's grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
  double number() {
    const std::size_t start = pos_;
    const auto digits = [&] {
      const std::size_t from = pos_;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
      if (pos_ == from) {
        if (pos_ >= text_.size()) raise("the text ends inside a number", true);
        fail("expected a digit, found '{}'", text_[pos_]);
      }
    };
    if (text_[pos_] == '-') ++pos_;
    if (pos_ < text_.size() && text_[pos_] == '0') {
      ++pos_;  // a leading zero stands alone: "01" is not a JSON number
    } else {
      digits();
    }
    if (pos_ < text_.size() && text_[pos_] == '.') ++pos_, digits();
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      digits();
    }
    double out = 0;
    const auto [end, ec] = std::from_chars(text_.data() + start, text_.data() + pos_, out);
    if (ec == std::errc::result_out_of_range) {
      pos_ = start;
      fail("number out of range");
    }
    return out;
  }

  unsigned hex4() {
    if (pos_ + 4 > text_.size()) raise("the text ends inside a \\u escape", true);
    unsigned code = 0;
    const auto [end, ec] = std::from_chars(text_.data() + pos_, text_.data() + pos_ + 4, code, 16);
    if (ec != std::errc() || end != text_.data() + pos_ + 4)
      fail("expected 4 hex digits after \\u");
    pos_ += 4;
    return code;
  }

  static void append_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  // A \uXXXX escape (the backslash and 'u' consumed), joining a surrogate pair.
  std::uint32_t unicode_escape() {
    std::uint32_t cp = hex4();
    if (cp >= 0xD800 && cp < 0xDC00 && text_.substr(pos_).starts_with("\\u")) {
      pos_ += 2;
      const std::uint32_t low = hex4();
      if (low < 0xDC00 || low >= 0xE000) fail("expected a low surrogate after \\u{:04x}", cp);
      cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    }
    return cp;
  }

  std::string string() {
    if (peek("a string") != '"') fail("expected '\"', found '{}'", text_[pos_]);
    ++pos_;
    std::string out;
    for (;;) {
      const char c = peek("the end of a string");
      ++pos_;
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) {
        --pos_;
        fail("control character 0x{:02x} inside a string", static_cast<int>(c));
      }
      if (c != '\\') {
        out += c;
        continue;
      }
      const char e = peek("an escape");
      ++pos_;
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u':
          append_utf8(out, unicode_escape());
          break;
        default:
          --pos_;
          fail("unknown escape '\\{}'", e);
      }
    }
  }

  std::string_view text_;
  std::string_view source_;
  std::size_t pos_ = 0;
};

}  // namespace

bool JsonValue::as_bool() const {
  CONFLUX_CHECK(is_bool(), "JSON value is {}, not a boolean", type_name());
  return std::get<bool>(value_);
}

double JsonValue::as_number() const {
  CONFLUX_CHECK(is_number(), "JSON value is {}, not a number", type_name());
  return std::get<double>(value_);
}

const std::string& JsonValue::as_string() const {
  CONFLUX_CHECK(is_string(), "JSON value is {}, not a string", type_name());
  return std::get<std::string>(value_);
}

const JsonValue::Array& JsonValue::as_array() const {
  CONFLUX_CHECK(is_array(), "JSON value is {}, not an array", type_name());
  return std::get<Array>(value_);
}

const JsonValue::Object& JsonValue::as_object() const {
  CONFLUX_CHECK(is_object(), "JSON value is {}, not an object", type_name());
  return std::get<Object>(value_);
}

const JsonValue* JsonValue::find(std::string_view key) const noexcept {
  const auto* members = std::get_if<Object>(&value_);
  if (members == nullptr) return nullptr;
  for (const auto& [name, value] : *members) {
    if (name == key) return &value;
  }
  return nullptr;
}

double JsonValue::number_or(std::string_view key, double fallback) const noexcept {
  const JsonValue* v = find(key);
  return v != nullptr && v->is_number() ? std::get<double>(v->value_) : fallback;
}

std::string JsonValue::string_or(std::string_view key, std::string fallback) const {
  const JsonValue* v = find(key);
  return v != nullptr && v->is_string() ? std::get<std::string>(v->value_) : std::move(fallback);
}

std::string_view JsonValue::type_name() const noexcept {
  static constexpr std::string_view kNames[] = {"null",     "a boolean", "a number",
                                                "a string", "an array",  "an object"};
  return kNames[value_.index()];
}

JsonValue parse_json(std::string_view text, std::string_view source) {
  Parser parser(text, source);
  JsonValue value = parser.value();
  parser.finish();
  return value;
}

std::size_t scan_json_array(std::string_view text, std::string_view key, std::string_view source,
                            const std::function<void(JsonValue&&)>& on_element) {
  Parser parser(text, source);
  const std::size_t count = parser.scan(key, on_element);
  parser.finish();
  return count;
}

}  // namespace conflux
