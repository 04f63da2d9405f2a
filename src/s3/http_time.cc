#include "s3/http_time.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include <array>
#include <charconv>

namespace silo::s3 {
namespace {

constexpr std::array<std::string_view, 7> kDays = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
constexpr std::array<std::string_view, 12> kMonths = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                      "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
constexpr std::array<std::string_view, 7> kLongDays = {"Sunday",   "Monday", "Tuesday", "Wednesday",
                                                       "Thursday", "Friday", "Saturday"};

// Howard Hinnant's days_from_civil / civil_from_days.
int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

struct Civil {
  int64_t year;
  unsigned month, day, hour, minute, second, weekday;
};

Civil civil(int64_t unix_seconds) {
  int64_t days = unix_seconds / 86400;
  int64_t rest = unix_seconds % 86400;
  if (rest < 0) {
    rest += 86400;
    --days;
  }
  const int64_t z = days + 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned d = doy - (153 * mp + 2) / 5 + 1;
  const unsigned m = mp < 10 ? mp + 3 : mp - 9;
  const int64_t y = static_cast<int64_t>(yoe) + era * 400 + (m <= 2);
  const unsigned weekday = static_cast<unsigned>(((days % 7) + 11) % 7);  // 1970-01-01 was a Thursday
  return Civil{y, m, d, static_cast<unsigned>(rest / 3600), static_cast<unsigned>(rest % 3600 / 60),
               static_cast<unsigned>(rest % 60), weekday};
}

std::optional<unsigned> number(std::string_view text, size_t at, size_t digits) {
  if (at + digits > text.size()) return std::nullopt;
  unsigned v = 0;
  for (size_t i = at; i < at + digits; ++i) {
    if (text[i] < '0' || text[i] > '9') return std::nullopt;
    v = v * 10 + static_cast<unsigned>(text[i] - '0');
  }
  return v;
}

std::optional<unsigned> month_of(std::string_view name) {
  for (unsigned i = 0; i < kMonths.size(); ++i) {
    if (kMonths[i] == name) return i + 1;
  }
  return std::nullopt;
}

std::optional<int64_t> make(int64_t year, unsigned month, unsigned day, unsigned hour, unsigned minute,
                            unsigned second) {
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) return std::nullopt;
  return days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second;
}

// "HH:MM:SS" at `at`.
bool clock(std::string_view text, size_t at, unsigned& h, unsigned& m, unsigned& s) {
  auto hh = number(text, at, 2), mm = number(text, at + 3, 2), ss = number(text, at + 6, 2);
  if (!hh || !mm || !ss || text.size() < at + 8 || text[at + 2] != ':' || text[at + 5] != ':') return false;
  h = *hh;
  m = *mm;
  s = *ss;
  return true;
}

// RFC 2822 / RFC 5322 3.3, as mail libraries write dates (Python's
// email.utils.formatdate): "Sun, 6 Nov 1994 08:49:37 -0000". The weekday is optional, the
// day one or two digits, the seconds optional; the zone a numeric offset or GMT, UT, UTC
// or Z. Returns the UTC time.
std::optional<int64_t> parse_rfc2822(std::string_view t) {
  std::vector<std::string_view> parts;
  for (size_t at = 0; at < t.size();) {
    const size_t end = std::min(t.find(' ', at), t.size());
    if (end > at) parts.push_back(t.substr(at, end - at));
    at = end + 1;
  }
  if (!parts.empty() && parts.front().size() == 4 && parts.front().back() == ',') {
    const std::string_view weekday = parts.front().substr(0, 3);
    if (std::find(kDays.begin(), kDays.end(), weekday) == kDays.end()) return std::nullopt;
    parts.erase(parts.begin());
  }
  if (parts.size() != 5 || parts[0].empty() || parts[0].size() > 2 || parts[2].size() != 4) return std::nullopt;
  const auto day = number(parts[0], 0, parts[0].size());
  const auto month = month_of(parts[1]);
  const auto year = number(parts[2], 0, 4);
  const std::string_view time = parts[3];
  unsigned h = 0, m = 0, s = 0;
  if (time.size() == 5 && time[2] == ':') {
    const auto hh = number(time, 0, 2), mm = number(time, 3, 2);
    if (!hh || !mm) return std::nullopt;
    h = *hh;
    m = *mm;
  } else if (!clock(time, 0, h, m, s) || time.size() != 8) {
    return std::nullopt;
  }
  if (!day || !month || !year) return std::nullopt;
  const std::string_view zone = parts[4];
  int64_t offset = 0;  // seconds east of UTC
  if (zone == "GMT" || zone == "UT" || zone == "UTC" || zone == "Z") {
    offset = 0;
  } else if (zone.size() == 5 && (zone[0] == '+' || zone[0] == '-')) {
    const auto hh = number(zone, 1, 2), mm = number(zone, 3, 2);
    if (!hh || !mm || *mm > 59) return std::nullopt;
    offset = (zone[0] == '-' ? -1 : 1) * static_cast<int64_t>(*hh * 3600 + *mm * 60);
  } else {
    return std::nullopt;
  }
  const auto local = make(*year, *month, *day, h, m, s);
  if (!local) return std::nullopt;
  return *local - offset;
}

}  // namespace

std::string format_iso8601(int64_t unix_nanos) {
  int64_t seconds = unix_nanos / 1'000'000'000;
  int64_t nanos = unix_nanos % 1'000'000'000;
  if (nanos < 0) {
    nanos += 1'000'000'000;
    --seconds;
  }
  const Civil c = civil(seconds);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", c.year, c.month, c.day, c.hour, c.minute, c.second,
                     nanos / 1'000'000);
}

std::string format_http_date(int64_t unix_seconds) {
  const Civil c = civil(unix_seconds);
  return fmt::format("{}, {:02} {} {:04} {:02}:{:02}:{:02} GMT", kDays[c.weekday], c.day, kMonths[c.month - 1], c.year,
                     c.hour, c.minute, c.second);
}

std::string format_amz_date(int64_t unix_seconds) {
  const Civil c = civil(unix_seconds);
  return fmt::format("{:04}{:02}{:02}T{:02}{:02}{:02}Z", c.year, c.month, c.day, c.hour, c.minute, c.second);
}

std::optional<int64_t> parse_http_date(std::string_view t) {
  unsigned h = 0, m = 0, s = 0;
  // IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT"
  if (t.size() == 29 && t[3] == ',' && t.substr(25) == " GMT") {
    auto day = number(t, 5, 2), year = number(t, 12, 4);
    auto month = month_of(t.substr(8, 3));
    if (!day || !year || !month || !clock(t, 17, h, m, s)) return std::nullopt;
    return make(*year, *month, *day, h, m, s);
  }
  // asctime: "Sun Nov  6 08:49:37 1994"
  if (t.size() == 24 && t[3] == ' ' && t[7] == ' ') {
    auto month = month_of(t.substr(4, 3));
    auto day = t[8] == ' ' ? number(t, 9, 1) : number(t, 8, 2);
    auto year = number(t, 20, 4);
    if (!day || !year || !month || !clock(t, 11, h, m, s)) return std::nullopt;
    return make(*year, *month, *day, h, m, s);
  }
  // RFC 850: "Sunday, 06-Nov-94 08:49:37 GMT"
  const size_t comma = t.find(", ");
  if (comma != std::string_view::npos && t.size() == comma + 24 && t.substr(t.size() - 4) == " GMT") {
    bool known = false;
    for (auto d : kLongDays) known |= d == t.substr(0, comma);
    const size_t at = comma + 2;
    auto day = number(t, at, 2), yy = number(t, at + 7, 2);
    auto month = month_of(t.substr(at + 3, 3));
    if (!known || !day || !yy || !month || t[at + 2] != '-' || t[at + 6] != '-' || !clock(t, at + 10, h, m, s)) {
      return std::nullopt;
    }
    const int64_t year = *yy < 70 ? 2000 + *yy : 1900 + *yy;
    return make(year, *month, *day, h, m, s);
  }
  // Anything else a client may send in Date: RFC 2822's forms (a numeric zone, a one-digit
  // day, no weekday), as mail libraries format dates.
  return parse_rfc2822(t);
}

std::optional<int64_t> parse_amz_date(std::string_view t) {
  if (t.size() != 16 || t[8] != 'T' || t[15] != 'Z') return std::nullopt;
  auto y = number(t, 0, 4), mo = number(t, 4, 2), d = number(t, 6, 2);
  auto h = number(t, 9, 2), mi = number(t, 11, 2), s = number(t, 13, 2);
  if (!y || !mo || !d || !h || !mi || !s) return std::nullopt;
  return make(*y, *mo, *d, *h, *mi, *s);
}

std::optional<int64_t> parse_iso8601(std::string_view t) {
  if (t.size() < 20 || t[4] != '-' || t[7] != '-' || t[10] != 'T' || t.back() != 'Z') return std::nullopt;
  auto y = number(t, 0, 4), mo = number(t, 5, 2), d = number(t, 8, 2);
  unsigned h = 0, m = 0, s = 0;
  if (!y || !mo || !d || !clock(t, 11, h, m, s)) return std::nullopt;
  if (t.size() > 20) {
    if (t[19] != '.') return std::nullopt;
    for (size_t i = 20; i + 1 < t.size(); ++i) {
      if (t[i] < '0' || t[i] > '9') return std::nullopt;
    }
  }
  return make(*y, *mo, *d, h, m, s);
}

}  // namespace silo::s3
