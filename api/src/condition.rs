//! What every `metav1.Condition` atoll writes must fit: the schema its CRDs carry (see
//! `schema::conditions`) refuses a longer message, and a refused status loses every condition.

/// The longest message a condition may carry, in characters.
pub const MESSAGE_MAX_CHARS: usize = 32768;

/// `message` cut to fit a condition, saying so at its end.
pub fn fit_message(message: String) -> String {
    const NOTE: &str = "... (cut)";
    if message.chars().count() <= MESSAGE_MAX_CHARS {
        return message;
    }
    let keep = MESSAGE_MAX_CHARS - NOTE.len();
    let end = message
        .char_indices()
        .nth(keep)
        .map_or(message.len(), |(end, _)| end);
    format!("{}{NOTE}", &message[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_messages_are_cut_to_fit() {
        assert_eq!(fit_message("short".into()), "short");
        let exact = "é".repeat(MESSAGE_MAX_CHARS);
        assert_eq!(fit_message(exact.clone()), exact);
        let cut = fit_message("é".repeat(MESSAGE_MAX_CHARS + 1));
        assert_eq!(cut.chars().count(), MESSAGE_MAX_CHARS);
        assert!(cut.ends_with("é... (cut)"));
    }
}
