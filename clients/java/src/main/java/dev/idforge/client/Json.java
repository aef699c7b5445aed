package dev.idforge.client;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A small JSON reader for the server's answers: objects as LinkedHashMap, arrays as
 * ArrayList, strings, numbers as their text (a {@link Num}), true, false and null.
 * Nesting is bounded; anything malformed is an IllegalArgumentException.
 */
final class Json {
  /** A JSON number, kept as its text so that no digit is lost. */
  record Num(String text) {
    long asLong() {
      return Long.parseLong(text);
    }
  }

  private static final int MAX_DEPTH = 32;

  private final String text;
  private int pos;

  private Json(String text) {
    this.text = text;
  }

  static Object parse(String text) {
    Json j = new Json(text);
    j.space();
    Object value = j.value(0);
    j.space();
    if (j.pos != text.length()) throw j.error("text after the value");
    return value;
  }

  private IllegalArgumentException error(String what) {
    return new IllegalArgumentException("bad JSON at " + pos + ": " + what);
  }

  private void space() {
    while (pos < text.length()) {
      char c = text.charAt(pos);
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return;
      pos++;
    }
  }

  private char peek() {
    if (pos >= text.length()) throw error("unexpected end");
    return text.charAt(pos);
  }

  private void expect(char c) {
    if (peek() != c) throw error("expected '" + c + "'");
    pos++;
  }

  private Object value(int depth) {
    if (depth > MAX_DEPTH) throw error("nested too deep");
    char c = peek();
    switch (c) {
      case '{':
        return object(depth);
      case '[':
        return array(depth);
      case '"':
        return string();
      case 't':
        return word("true", Boolean.TRUE);
      case 'f':
        return word("false", Boolean.FALSE);
      case 'n':
        return word("null", null);
      default:
        if (c == '-' || (c >= '0' && c <= '9')) return number();
        throw error("unexpected '" + c + "'");
    }
  }

  private Object word(String word, Object value) {
    if (!text.startsWith(word, pos)) throw error("expected " + word);
    pos += word.length();
    return value;
  }

  private Map<String, Object> object(int depth) {
    expect('{');
    Map<String, Object> out = new LinkedHashMap<>();
    space();
    if (peek() == '}') {
      pos++;
      return out;
    }
    while (true) {
      space();
      if (peek() != '"') throw error("expected a key");
      String key = string();
      space();
      expect(':');
      space();
      out.put(key, value(depth + 1));
      space();
      if (peek() == ',') {
        pos++;
        continue;
      }
      expect('}');
      return out;
    }
  }

  private List<Object> array(int depth) {
    expect('[');
    List<Object> out = new ArrayList<>();
    space();
    if (peek() == ']') {
      pos++;
      return out;
    }
    while (true) {
      space();
      out.add(value(depth + 1));
      space();
      if (peek() == ',') {
        pos++;
        continue;
      }
      expect(']');
      return out;
    }
  }

  private String string() {
    expect('"');
    int start = pos;
    // Fast path: no escapes.
    while (pos < text.length()) {
      char c = text.charAt(pos);
      if (c == '"') {
        return text.substring(start, pos++);
      }
      if (c == '\\' || c < 0x20) break;
      pos++;
    }
    StringBuilder out = new StringBuilder(text.substring(start, pos));
    while (true) {
      char c = peek();
      pos++;
      if (c == '"') return out.toString();
      if (c < 0x20) throw error("a control character in a string");
      if (c != '\\') {
        out.append(c);
        continue;
      }
      char e = peek();
      pos++;
      switch (e) {
        case '"':
        case '\\':
        case '/':
          out.append(e);
          break;
        case 'b':
          out.append('\b');
          break;
        case 'f':
          out.append('\f');
          break;
        case 'n':
          out.append('\n');
          break;
        case 'r':
          out.append('\r');
          break;
        case 't':
          out.append('\t');
          break;
        case 'u':
          if (pos + 4 > text.length()) throw error("a short \\u escape");
          try {
            out.append((char) Integer.parseInt(text.substring(pos, pos + 4), 16));
          } catch (NumberFormatException x) {
            throw error("a bad \\u escape");
          }
          pos += 4;
          break;
        default:
          throw error("a bad escape");
      }
    }
  }

  private Num number() {
    int start = pos;
    if (peek() == '-') pos++;
    int digits = 0;
    while (pos < text.length() && Character.isDigit(text.charAt(pos)) && text.charAt(pos) < 128) {
      pos++;
      digits++;
    }
    if (digits == 0) throw error("a number without digits");
    if (pos < text.length() && text.charAt(pos) == '.') {
      pos++;
      while (pos < text.length() && text.charAt(pos) >= '0' && text.charAt(pos) <= '9') pos++;
    }
    if (pos < text.length() && (text.charAt(pos) == 'e' || text.charAt(pos) == 'E')) {
      pos++;
      if (pos < text.length() && (text.charAt(pos) == '+' || text.charAt(pos) == '-')) pos++;
      while (pos < text.length() && text.charAt(pos) >= '0' && text.charAt(pos) <= '9') pos++;
    }
    return new Num(text.substring(start, pos));
  }
}
