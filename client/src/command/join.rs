//! A command's value from its parts' answers: merged by key, combined as
//! the servers' tips say, or one part's own.

use zaris_core::Reply;

use super::plan::{Join, Merge};
use crate::{Error, Value};

/// A command's value from its parts' answers.
pub(crate) fn join(join: &Join, answers: Vec<Result<Value, Error>>) -> Result<Value, Error> {
    match join {
        Join::One => answers
            .into_iter()
            .next()
            .unwrap_or_else(|| unreachable!("one part")),
        Join::Combine(reply) => combine(*reply, answers),
        Join::AnyKey => {
            let mut keys = Vec::new();
            for answer in answers {
                keys.push(answer?);
            }
            Ok(keys
                .into_iter()
                .find(|v| !matches!(v, Value::Nil))
                .unwrap_or(Value::Nil))
        }
        Join::Merge {
            merge: Merge::Sum, ..
        } => {
            let mut total = 0;
            for answer in answers {
                total += answer?.as_int().ok_or_else(|| Error::UnexpectedReply {
                    command: "a split command",
                    reply: "not a count".into(),
                })?;
            }
            Ok(Value::Int(total))
        }
        Join::Merge {
            merge: Merge::Ok, ..
        } => {
            for answer in answers {
                answer?;
            }
            Ok(Value::Status("OK".into()))
        }
        Join::Merge {
            merge: Merge::InOrder,
            members,
            keys,
        } => {
            let mut out = vec![Value::Nil; *keys];
            for (keys, answer) in members.iter().zip(answers) {
                for (&i, value) in keys.iter().zip(answer?.into_array()) {
                    out[i] = value;
                }
            }
            Ok(Value::Array(out))
        }
    }
}

/// The answers of every master, combined as the servers' response tip says.
pub(crate) fn combine(reply: Reply, answers: Vec<Result<Value, Error>>) -> Result<Value, Error> {
    let first_error = || answers.iter().find_map(|a| a.as_ref().err().cloned());
    let values = || answers.iter().filter_map(|a| a.as_ref().ok());
    match reply {
        Reply::AllSucceeded => match first_error() {
            Some(e) => Err(e),
            None => Ok(values().next().cloned().unwrap_or(Value::Nil)),
        },
        Reply::OneSucceeded => match values().next() {
            Some(v) => Ok(v.clone()),
            None => Err(first_error().unwrap_or(Error::Server("no node answered".into()))),
        },
        Reply::Sum | Reply::Min | Reply::Max => {
            if let Some(e) = first_error() {
                return Err(e);
            }
            let ints: Option<Vec<i64>> = values().map(Value::as_int).collect();
            let ints = ints.ok_or_else(|| Error::UnexpectedReply {
                command: "a fan-out command",
                reply: "not an integer from every node".into(),
            })?;
            Ok(Value::Int(match reply {
                Reply::Sum => ints.iter().sum(),
                Reply::Min => ints.iter().copied().min().unwrap_or(0),
                _ => ints.iter().copied().max().unwrap_or(0),
            }))
        }
        Reply::LogicalAnd | Reply::LogicalOr => {
            if let Some(e) = first_error() {
                return Err(e);
            }
            let and = reply == Reply::LogicalAnd;
            let arrays: Vec<Vec<Value>> = values().cloned().map(Value::into_array).collect();
            let len = arrays.first().map_or(0, Vec::len);
            Ok(Value::Array(
                (0..len)
                    .map(|i| {
                        let mut bits = arrays
                            .iter()
                            .map(|a| a.get(i).and_then(Value::as_int).unwrap_or(0) != 0);
                        let bit = if and {
                            bits.all(|b| b)
                        } else {
                            bits.any(|b| b)
                        };
                        Value::Int(i64::from(bit))
                    })
                    .collect(),
            ))
        }
        // No policy (`KEYS`) or a special one (`INFO`): arrays are
        // concatenated (every node's keys), anything else listed per node
        // (see `Client::cmd_each_master` to know which node said what).
        _ => {
            if let Some(e) = first_error() {
                return Err(e);
            }
            let all: Vec<Value> = values().cloned().collect();
            if all.iter().all(|v| matches!(v, Value::Array(_))) {
                Ok(Value::Array(
                    all.into_iter().flat_map(Value::into_array).collect(),
                ))
            } else {
                Ok(Value::Array(all))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(values: Vec<Value>) -> Vec<Result<Value, Error>> {
        values.into_iter().map(Ok).collect()
    }

    #[test]
    fn fan_out_answers_combine_as_the_tips_say() {
        assert_eq!(
            combine(Reply::Sum, ok(vec![Value::Int(2), Value::Int(5)])),
            Ok(Value::Int(7))
        );
        assert_eq!(
            combine(Reply::Max, ok(vec![Value::Int(2), Value::Int(5)])),
            Ok(Value::Int(5))
        );
        assert_eq!(
            combine(
                Reply::AllSucceeded,
                vec![
                    Ok(Value::Status("OK".into())),
                    Err(Error::Server("ERR x".into()))
                ]
            ),
            Err(Error::Server("ERR x".into()))
        );
        let exists = |bits: &[i64]| Value::Array(bits.iter().map(|&b| Value::Int(b)).collect());
        assert_eq!(
            combine(
                Reply::LogicalAnd,
                ok(vec![exists(&[1, 1, 0]), exists(&[1, 0, 0])])
            ),
            Ok(exists(&[1, 0, 0]))
        );
        assert_eq!(
            combine(
                Reply::EachNode,
                ok(vec![
                    Value::Array(vec![Value::Data("a".into())]),
                    Value::Array(vec![Value::Data("b".into())])
                ])
            ),
            Ok(Value::Array(vec![
                Value::Data("a".into()),
                Value::Data("b".into())
            ])),
            "KEYS from every master, concatenated"
        );
        assert_eq!(
            join(
                &Join::AnyKey,
                ok(vec![Value::Nil, Value::Data("k".into()), Value::Nil])
            ),
            Ok(Value::Data("k".into())),
            "a key from a node that has one"
        );
        assert_eq!(
            combine(
                Reply::Special,
                ok(vec![Value::Data("a".into()), Value::Data("b".into())])
            ),
            Ok(Value::Array(vec![
                Value::Data("a".into()),
                Value::Data("b".into())
            ])),
            "INFO: each node's text"
        );
    }
}
