#include "wire/policy_json.h"

#include <nlohmann/json.hpp>

namespace silo::wire {
namespace {

Status malformed(std::string message) {
  return Status::invalid_argument("{}", message).with_reason("MalformedPolicy");
}

// A member that is a string or an array of strings (IAM allows both wherever a list goes).
Result<std::vector<std::string>> strings(const nlohmann::json& value, std::string_view what) {
  std::vector<std::string> out;
  if (value.is_string()) {
    out.push_back(value.get<std::string>());
  } else if (value.is_array() && !value.empty()) {
    for (const auto& item : value) {
      if (!item.is_string()) return malformed(fmt::format("{} must hold strings only", what));
      out.push_back(item.get<std::string>());
    }
  } else {
    return malformed(fmt::format("{} must be a string or a non-empty array of strings", what));
  }
  for (const auto& s : out) {
    if (s.empty()) return malformed(fmt::format("{} holds an empty string", what));
  }
  return out;
}

// "KEY", "arn:aws:iam::ACCOUNT:user/KEY" -> KEY; "*" -> "*".
Result<std::string> user_of(const std::string& principal) {
  constexpr std::string_view kIam = "arn:aws:iam::";
  if (principal.rfind(kIam, 0) != 0) return principal;
  const size_t user = principal.find(":user/", kIam.size());
  if (user == std::string::npos || user + 6 == principal.size()) {
    return malformed(fmt::format("Invalid principal in policy: {} (Silo's principals are its users: "
                                 "an access key, arn:aws:iam::*:user/KEY or \"*\")",
                                 principal));
  }
  return principal.substr(user + 6);
}

Status read_principal(const nlohmann::json& value, PolicyStatement& st) {
  if (value.is_string()) {
    if (value.get<std::string>() != "*") {
      return malformed("Invalid principal in policy: a string Principal must be \"*\" (else {\"AWS\": [...]})");
    }
    st.any_principal = true;
    return Status::ok();
  }
  if (!value.is_object()) return malformed("Invalid principal in policy: Principal must be \"*\" or an object");
  for (const auto& [kind, who] : value.items()) {
    if (kind != "AWS") {
      return malformed(fmt::format("Invalid principal in policy: {} principals are not supported (use \"AWS\")", kind));
    }
    ASSIGN_OR_RETURN(const std::vector<std::string> names, strings(who, "Principal.AWS"));
    for (const auto& name : names) {
      ASSIGN_OR_RETURN(const std::string user, user_of(name));
      if (user == "*") {
        st.any_principal = true;
      } else {
        st.users.push_back(user);
      }
    }
  }
  if (!st.any_principal && st.users.empty()) return malformed("Invalid principal in policy: it names nobody");
  return Status::ok();
}

Status read_conditions(const nlohmann::json& value, PolicyStatement& st) {
  if (!value.is_object()) return malformed("Condition must be an object of operators");
  for (const auto& [op, keys] : value.items()) {
    if (!keys.is_object() || keys.empty()) {
      return malformed(fmt::format("Condition {} must be an object of keys and values", op));
    }
    for (const auto& [key, values] : keys.items()) {
      PolicyCondition c{op, key, {}};
      if (values.is_boolean()) {
        c.values.push_back(values.get<bool>() ? "true" : "false");
      } else if (values.is_number()) {
        c.values.push_back(values.dump());
      } else {
        ASSIGN_OR_RETURN(c.values, strings(values, fmt::format("Condition {}.{}", op, key)));
      }
      st.conditions.push_back(std::move(c));
    }
  }
  return Status::ok();
}

Result<PolicyStatement> read_statement(const nlohmann::json& value) {
  if (!value.is_object()) return malformed("each Statement must be an object");
  PolicyStatement st;
  bool has_principal = false;
  for (const auto& [name, member] : value.items()) {
    if (name == "Sid") {
      if (!member.is_string()) return malformed("Sid must be a string");
      st.sid = member.get<std::string>();
    } else if (name == "Effect") {
      const std::string effect = member.is_string() ? member.get<std::string>() : "";
      if (effect != "Allow" && effect != "Deny") return malformed("Effect must be \"Allow\" or \"Deny\"");
      st.allow = effect == "Allow";
    } else if (name == "Principal") {
      RETURN_IF_ERROR(read_principal(member, st));
      has_principal = true;
    } else if (name == "Action" || name == "NotAction") {
      if (!st.actions.empty()) return malformed("a statement has either Action or NotAction, once");
      ASSIGN_OR_RETURN(st.actions, strings(member, name));
      st.not_action = name == "NotAction";
    } else if (name == "Resource" || name == "NotResource") {
      if (!st.resources.empty()) return malformed("a statement has either Resource or NotResource, once");
      ASSIGN_OR_RETURN(st.resources, strings(member, name));
      st.not_resource = name == "NotResource";
    } else if (name == "Condition") {
      RETURN_IF_ERROR(read_conditions(member, st));
    } else if (name == "NotPrincipal") {
      return malformed("NotPrincipal is not supported");
    } else {
      return malformed(fmt::format("unknown member {} in a Statement", name));
    }
  }
  if (!value.contains("Effect")) return malformed("Missing required field Effect");
  if (!has_principal) return malformed("Missing required field Principal");
  if (st.actions.empty()) return malformed("Missing required field Action");
  if (st.resources.empty()) return malformed("Missing required field Resource");
  return st;
}

}  // namespace

Result<Policy> parse_policy_json(std::string_view text) {
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return malformed("This policy contains invalid Json");
  if (!doc.is_object()) return malformed("a policy must be a JSON object");
  Policy policy;
  for (const auto& [name, member] : doc.items()) {
    if (name == "Version") {
      policy.version = member.is_string() ? member.get<std::string>() : "";
      if (policy.version != "2012-10-17" && policy.version != "2008-10-17") {
        return malformed("Version must be \"2012-10-17\" or \"2008-10-17\"");
      }
    } else if (name == "Id") {
      if (!member.is_string()) return malformed("Id must be a string");
      policy.id = member.get<std::string>();
    } else if (name == "Statement") {
      if (member.is_object()) {
        ASSIGN_OR_RETURN(PolicyStatement st, read_statement(member));
        policy.statements.push_back(std::move(st));
      } else if (member.is_array() && !member.empty()) {
        for (const auto& item : member) {
          ASSIGN_OR_RETURN(PolicyStatement st, read_statement(item));
          policy.statements.push_back(std::move(st));
        }
      } else {
        return malformed("Statement must be an object or a non-empty array");
      }
    } else {
      return malformed(fmt::format("unknown member {} in the policy", name));
    }
  }
  if (policy.statements.empty()) return malformed("Missing required field Statement");
  return policy;
}

}  // namespace silo::wire
