// The Kubernetes object decoder, YAML and files: YAML streams (yaml-cpp, converted to the
// JSON value model that decode_json.cc decodes) and manifest/trace files (.json, .jsonl, YAML)
// into the object model of api/k8s/objects.h. Library exceptions are caught at the public
// functions; nothing throws out of this file.

#include <fmt/format.h>
#include <yaml-cpp/anchor.h>
#include <yaml-cpp/emitterstyle.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

#include "api/k8s/decode.h"
#include "api/k8s/decode_internal.h"

namespace volcache::k8s {

using namespace decode_internal;  // NOLINT(google-build-using-namespace): the shared decoder pieces

namespace {

// ------------------------------------------------------------------------- YAML parsing
//
// yaml-cpp's event API (YAML::Parser + EventHandler) feeds a JSON builder directly rather than
// going through YAML::LoadAll and YAML::Node, for three reasons: LoadAll in yaml-cpp 0.7 loops
// forever, allocating, on a stray token at document level (input `,` — jbeder/yaml-cpp#1040,
// fixed upstream only in 0.8.1), and we must stop that from outside; YAML::Node turns a
// self-referencing alias into a cyclic graph; and building one value tree instead of two is
// cheaper. Our builder keeps an explicit stack, so nothing here recurses on input depth
// (yaml-cpp's own parser is bounded by its depth guard).

// Deepest nesting accepted. Real manifests (CRD schemas included) stay well below 64.
constexpr size_t kMaxYamlDepth = 256;

std::string YamlWhere(const YAML::Mark& mark) {
  if (mark.is_null() || mark.line < 0) return "";
  return fmt::format("line {}, column {}: ", mark.line + 1, mark.column + 1);
}

// Builds one nlohmann::json value per YAML document from parser events. Events cannot fail,
// so the first error is recorded and every later event of the document is ignored.
class JsonBuilder final : public YAML::EventHandler {
 public:
  // `budget` bounds the number of JSON nodes produced across the stream, counting every
  // alias expansion, so an alias bomb fails fast instead of exhausting memory.
  explicit JsonBuilder(size_t budget) : budget_(budget) {}

  const Status& status() const { return error_; }
  // The finished document (null for an empty one) and where its content starts.
  json& document() { return root_; }
  const YAML::Mark& document_mark() const { return doc_mark_; }
  const YAML::Mark& start_mark() const { return start_mark_; }

  void OnDocumentStart(const YAML::Mark& mark) override {
    stack_.clear();
    root_ = nullptr;
    start_mark_ = mark;
    doc_mark_ = YAML::Mark::null_mark();
    have_doc_mark_ = false;
  }
  void OnDocumentEnd() override {}

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    if (!Begin(mark)) return;
    if (AwaitingKey()) {
      SetKey("null");
      return;
    }
    if (!Spend(mark, 1)) return;
    Emit(json(nullptr), anchor, 1);
  }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    if (!Begin(mark)) return;
    auto it = anchors_.find(anchor);
    if (it == anchors_.end()) {
      Fail(mark, "alias refers to an anchor that encloses it (recursive alias)");
      return;
    }
    if (AwaitingKey()) {
      const json& v = it->second.value;
      if (v.is_string()) {
        SetKey(v.get<std::string>());
      } else if (v.is_primitive() && !v.is_null()) {
        SetKey(v.dump());
      } else {
        Fail(mark, "mapping keys must be scalars");
      }
      return;
    }
    const size_t nodes = it->second.nodes;
    if (!Spend(mark, nodes)) return;
    Emit(json(it->second.value), YAML::NullAnchor, 0);
  }

  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    if (!Begin(mark)) return;
    if (AwaitingKey()) {
      // Keys keep their text (`1.0:` is the key "1.0"), whatever the scalar would resolve to.
      SetKey(value);
      if (anchor != YAML::NullAnchor) anchors_[anchor] = Anchored{json(value), 1};
      return;
    }
    json v;
    if (!ResolveScalar(mark, tag, value, &v)) return;
    if (!Spend(mark, 1)) return;
    Emit(std::move(v), anchor, 1);
  }

  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Open(mark, anchor, json::array());
  }
  void OnSequenceEnd() override { Close(); }

  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    Open(mark, anchor, json::object());
  }
  void OnMapEnd() override { Close(); }

 private:
  struct Frame {
    json value;
    YAML::anchor_t anchor;
    size_t spent_at_open;  // budget spent before this collection, to size its anchor
    bool have_key = false;
    std::string key;
  };
  struct Anchored {
    json value;
    size_t nodes;
  };

  // False once the document has failed; records where its content starts.
  bool Begin(const YAML::Mark& mark) {
    if (!error_.ok()) return false;
    if (!have_doc_mark_) {
      doc_mark_ = mark;
      have_doc_mark_ = true;
    }
    return true;
  }

  void Fail(const YAML::Mark& mark, std::string_view problem) {
    if (error_.ok())
      error_ = Status::InvalidArgument(fmt::format("invalid YAML: {}{}", YamlWhere(mark), problem));
  }

  bool Spend(const YAML::Mark& mark, size_t nodes) {
    if (nodes > budget_ - spent_) {
      Fail(mark, "document expands to too many nodes (alias expansion?)");
      return false;
    }
    spent_ += nodes;
    return true;
  }

  bool AwaitingKey() const {
    return !stack_.empty() && stack_.back().value.is_object() && !stack_.back().have_key;
  }

  void SetKey(std::string key) {
    stack_.back().key = std::move(key);
    stack_.back().have_key = true;
  }

  void Open(const YAML::Mark& mark, YAML::anchor_t anchor, json empty) {
    if (!Begin(mark)) return;
    if (AwaitingKey()) {
      Fail(mark, "mapping keys must be scalars");
      return;
    }
    if (stack_.size() >= kMaxYamlDepth) {
      Fail(mark, fmt::format("nesting deeper than {} levels", kMaxYamlDepth));
      return;
    }
    if (!Spend(mark, 1)) return;
    stack_.push_back(Frame{std::move(empty), anchor, spent_ - 1, false, {}});
  }

  void Close() {
    if (!error_.ok() || stack_.empty()) return;
    Frame f = std::move(stack_.back());
    stack_.pop_back();
    Emit(std::move(f.value), f.anchor, spent_ - f.spent_at_open);
  }

  // Places a finished value into its parent (or as the document) and remembers it under its
  // anchor. `nodes` is its size in budget units, charged again for every alias to it.
  void Emit(json v, YAML::anchor_t anchor, size_t nodes) {
    if (anchor != YAML::NullAnchor) anchors_[anchor] = Anchored{v, nodes};
    if (stack_.empty()) {
      root_ = std::move(v);
      return;
    }
    Frame& top = stack_.back();
    if (top.value.is_array()) {
      top.value.push_back(std::move(v));
    } else {
      top.value[top.key] = std::move(v);  // a repeated key: the last one wins, as in JSON
      top.have_key = false;
    }
  }

  // Plain scalars resolve like Kubernetes manifests expect: null, booleans and integers are
  // typed; everything else, floats included, stays a string so `cpu: 0.5` keeps its exact
  // decimal text. Quoted scalars (tag "!") are always strings.
  bool ResolveScalar(const YAML::Mark& mark, const std::string& tag, const std::string& s, json* out) {
    if (tag == "!" || tag == "tag:yaml.org,2002:str" || tag == "tag:yaml.org,2002:float") {
      *out = s;
      return true;
    }
    if (tag == "tag:yaml.org,2002:null" || s.empty() || s == "~" || s == "null" || s == "Null" ||
        s == "NULL") {
      *out = nullptr;
      return true;
    }
    if (s == "true" || s == "True" || s == "TRUE") {
      *out = true;
      return true;
    }
    if (s == "false" || s == "False" || s == "FALSE") {
      *out = false;
      return true;
    }
    if (IsDecimalInteger(s)) {
      const char* first = s.data() + (s[0] == '+' ? 1 : 0);
      const char* last = s.data() + s.size();
      int64_t i = 0;
      if (auto r = std::from_chars(first, last, i); r.ec == std::errc() && r.ptr == last) {
        *out = i;
        return true;
      }
      uint64_t u = 0;
      if (auto r = std::from_chars(first, last, u); r.ec == std::errc() && r.ptr == last) {
        *out = u;
        return true;
      }
      // Beyond 64 bits: keep the text (a quantity can still be exact).
    }
    if (tag == "tag:yaml.org,2002:int" || tag == "tag:yaml.org,2002:bool") {
      Fail(mark,
           fmt::format("\"{}\" is not a valid {}", s.size() <= 64 ? s : s.substr(0, 64), tag.substr(18)));
      return false;
    }
    *out = s;
    return true;
  }

  static bool IsDecimalInteger(std::string_view s) {
    if (!s.empty() && (s[0] == '+' || s[0] == '-')) s.remove_prefix(1);
    if (s.empty()) return false;
    for (char ch : s) {
      if (ch < '0' || ch > '9') return false;
    }
    return true;
  }

  const size_t budget_;
  size_t spent_ = 0;
  std::vector<Frame> stack_;
  json root_;
  YAML::Mark start_mark_ = YAML::Mark::null_mark();
  YAML::Mark doc_mark_ = YAML::Mark::null_mark();
  bool have_doc_mark_ = false;
  std::unordered_map<YAML::anchor_t, Anchored> anchors_;
  Status error_;
};

// A parsed YAML (or JSON) document and where it starts, for error messages.
struct Document {
  json value;
  int index = 0;  // 1-based position in the stream
  int line = 0;   // 1-based; 0 when unknown
};

Result<std::vector<Document>> ParseYamlStream(std::string_view text) {
  if (text.size() > kMaxDocumentBytes) return TooLarge(text.size());
  std::vector<Document> docs;

  // A JSON document (kubectl -o json, API responses) keeps its number types exactly when
  // read by the JSON parser; a YAML flow mapping that is not valid JSON falls through.
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && (text[first] == '{' || text[first] == '[')) {
    json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
    if (!j.is_discarded()) {
      docs.push_back(Document{std::move(j), 1, 1});
      return docs;
    }
  }

  std::istringstream in{std::string(text)};
  JsonBuilder builder(2 * text.size() + 1024);
  int index = 0;
  int previous_pos = -1;
  try {
    YAML::Parser parser(in);
    while (parser.HandleNextDocument(builder)) {
      ++index;
      if (!builder.status().ok()) return builder.status().WithPrefix(fmt::format("document {}", index));
      // A document that starts where the previous one started consumed nothing: yaml-cpp is
      // stuck on a token it cannot place (and would repeat it forever).
      const YAML::Mark& start = builder.start_mark();
      if (start.pos == previous_pos) {
        const char ch =
            static_cast<size_t>(start.pos) < text.size() ? text[static_cast<size_t>(start.pos)] : '?';
        return Status::InvalidArgument(
            fmt::format("invalid YAML: {}unexpected '{}'", YamlWhere(start), std::string(1, ch)));
      }
      previous_pos = start.pos;
      if (builder.document().is_null()) continue;  // empty document (`---` with nothing after it)
      const YAML::Mark& mark = builder.document_mark();
      docs.push_back(Document{std::move(builder.document()), index, mark.is_null() ? 0 : mark.line + 1});
    }
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(fmt::format("invalid YAML: {}{}", YamlWhere(e.mark), e.msg));
  }
  return docs;
}

Status AppendObjects(const json& j, std::vector<Object>* out) {
  if (LooksLikeList(j)) {
    auto list = DecodeListValue(j);
    if (!list.ok()) return list.status();
    for (Object& o : list->items) out->push_back(std::move(o));
    return Status::Ok();
  }
  auto obj = DecodeValue(j, DecodeOptions{});
  if (!obj.ok()) return obj.status();
  out->push_back(std::move(obj).value());
  return Status::Ok();
}

Result<std::vector<Object>> DecodeYamlImpl(std::string_view text) {
  auto docs = ParseYamlStream(text);
  if (!docs.ok()) return docs.status();
  std::vector<Object> out;
  for (const Document& d : *docs) {
    Status st = AppendObjects(d.value, &out);
    if (!st.ok()) {
      return st.WithPrefix(d.line > 0 ? fmt::format("document {} (line {})", d.index, d.line)
                                      : fmt::format("document {}", d.index));
    }
  }
  return out;
}

Result<std::string> ReadWholeFile(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) return Status::InvalidArgument(fmt::format("cannot read: {}", ec.message()));
  if (size > kMaxDocumentBytes) return TooLarge(static_cast<size_t>(size));
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::InvalidArgument("cannot open for reading");
  std::string data(static_cast<size_t>(size), '\0');
  in.read(data.data(), static_cast<std::streamsize>(size));
  data.resize(static_cast<size_t>(in.gcount()));
  return data;
}

Result<std::vector<Object>> DecodeJsonLines(std::string_view text) {
  std::vector<Object> out;
  size_t line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    auto ev = DecodeWatchEvent(line);
    if (!ev.ok()) return ev.status().WithPrefix(fmt::format("line {}", line_no));
    switch (ev->type) {
      case WatchEventType::kBookmark:
        break;  // carries a resourceVersion, not an object
      case WatchEventType::kError:
        return Status::InvalidArgument(fmt::format("line {}: watch ERROR event: {} ({}, code {})", line_no,
                                                   ev->error.message, ev->error.reason, ev->error.code));
      default:
        out.push_back(std::move(*ev->object));
    }
  }
  return out;
}

}  // namespace

// ----------------------------------------------------------------------- public functions

Result<std::vector<Object>> DecodeYamlDocuments(std::string_view yaml) {
  return Guard<std::vector<Object>>([&] { return DecodeYamlImpl(yaml); });
}

Result<std::vector<Object>> DecodeFile(const std::string& path) {
  auto result = Guard<std::vector<Object>>([&]() -> Result<std::vector<Object>> {
    auto data = ReadWholeFile(path);
    if (!data.ok()) return data.status();
    const std::string ext = std::filesystem::path(path).extension().string();
    if (ext == ".json") {
      auto j = ParseJson(*data);
      if (!j.ok()) return j.status();
      std::vector<Object> out;
      VC_RETURN_IF_ERROR(AppendObjects(*j, &out));
      return out;
    }
    if (ext == ".jsonl") return DecodeJsonLines(*data);
    return DecodeYamlImpl(*data);
  });
  if (!result.ok()) return result.status().WithPrefix(path);
  return result;
}

}  // namespace volcache::k8s
