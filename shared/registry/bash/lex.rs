//! The shell's tokens: words (each a list of [`Atom`]s that remember what
//! was quoted, so expansion can come later, in order, with the variables
//! known by then), redirections with their target word or heredoc body,
//! and the separators between simple commands.
//!
//! A word is read the way POSIX shells read one: `'…'`, `"…"` (with `$`,
//! `` ` `` and `\` inside), `$'…'` (ANSI-C escapes), `\c`, `$NAME`,
//! `${…}`, `$(…)`, `` `…` ``, `$((…))`, `<(…)`, `>(…)`, a leading `~`.
//! Nothing is expanded here.

/// One piece of a word, as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Atom {
    /// A literal character; `quoted` when quoting or a backslash made it one
    /// (so `*`, `{` and `,` in it are not special).
    Char { c: char, quoted: bool },
    /// `$NAME`, `${NAME}`, `${NAME:-word}` …: `name` is what stood between
    /// the braces up to an operator (`1`, `@`, `?` for the special ones).
    Param {
        name: String,
        quoted: bool,
        default: Option<Default>,
        /// `${…}` held something jkz does not evaluate (`${#x}`, `${x%.*}`).
        odd: bool,
    },
    /// `$(…)` or `` `…` ``: the body, a script.
    Command { body: String, quoted: bool },
    /// `<(…)` (`input`: the command reads what the body prints) or `>(…)`.
    Process { body: String, input: bool },
    /// `$((…))`.
    Arithmetic,
    /// A leading unquoted `~` (`Some(user)` for `~user`).
    Tilde(Option<String>),
}

/// `${NAME:-word}` (`colon`: also when NAME is empty), `${NAME-word}`,
/// `${NAME:=word}`, `${NAME=word}`: the word, unexpanded text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Default {
    pub colon: bool,
    pub word: String,
}

/// A word as written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RawWord {
    pub atoms: Vec<Atom>,
}

impl RawWord {
    /// A word of quoted text (a heredoc body).
    pub fn quoted(text: &str) -> RawWord {
        RawWord {
            atoms: text
                .chars()
                .map(|c| Atom::Char { c, quoted: true })
                .collect(),
        }
    }

    /// The word's literal text when it has no expansion at all.
    pub fn literal(&self) -> Option<String> {
        self.atoms
            .iter()
            .map(|a| match a {
                Atom::Char { c, .. } => Some(*c),
                _ => None,
            })
            .collect()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Redirect {
    /// `>`, `>>`, `>|`, `&>`, `&>>`, `<>`, `>&` onto a file.
    Write,
    /// `<`: the command reads the file.
    Read,
    /// `<&`, `>&N`, `>&-`: a descriptor, no file.
    Descriptor,
    /// `<<WORD`, `<<-WORD`: the body (a quoted word) is the input.
    HereDoc,
    /// `<<<WORD`: the word and a newline are the input.
    HereString,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sep {
    /// `;`, `&&`, `||`, `&`, a newline.
    Next,
    /// `|`, `|&`: the next command reads this one's output.
    Pipe,
    /// `(`: a subshell; a `cd` or an assignment inside ends at its `)`.
    Open,
    Close,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Token {
    Word(RawWord),
    /// A redirection: its descriptor when one was written (`2>`), and its
    /// target word (for a heredoc: its body).
    Redirect(Redirect, Option<u32>, RawWord),
    Sep(Sep),
}

/// The tokens of `script`, or `None` when its quotes or substitutions do
/// not close.
pub fn lex(script: &str) -> Option<Vec<Token>> {
    let chars: Vec<char> = script.chars().collect();
    let mut lexer = Lexer {
        s: &chars,
        i: 0,
        tokens: Vec::new(),
        heredocs: Vec::new(),
    };
    lexer.run()?;
    Some(lexer.tokens)
}

struct Lexer<'a> {
    s: &'a [char],
    i: usize,
    tokens: Vec<Token>,
    /// Heredocs whose bodies start after the current line: (token index,
    /// delimiter, strip leading tabs, delimiter quoted).
    heredocs: Vec<(usize, String, bool, bool)>,
}

impl Lexer<'_> {
    fn peek(&self, ahead: usize) -> Option<char> {
        self.s.get(self.i + ahead).copied()
    }

    fn starts(&self, text: &str) -> bool {
        text.chars()
            .enumerate()
            .all(|(k, c)| self.peek(k) == Some(c))
    }

    fn run(&mut self) -> Option<()> {
        let mut pending: Option<(Redirect, Option<u32>, bool)> = None;
        while let Some(c) = self.peek(0) {
            let process = matches!(c, '<' | '>') && self.peek(1) == Some('(');
            match c {
                ' ' | '\t' | '\r' => self.i += 1,
                '\\' if self.peek(1) == Some('\n') => self.i += 2,
                '\n' => {
                    self.i += 1;
                    self.tokens.push(Token::Sep(Sep::Next));
                    self.read_heredoc_bodies();
                }
                '#' => {
                    while self.peek(0).is_some_and(|c| c != '\n') {
                        self.i += 1;
                    }
                }
                ';' | '&' | '|' | '(' | ')' if pending.is_none() => {
                    if c == '&' && self.peek(1) == Some('>') {
                        self.i += if self.starts("&>>") { 3 } else { 2 };
                        pending = Some((Redirect::Write, Some(1), false));
                        continue;
                    }
                    let sep = match c {
                        '(' => Sep::Open,
                        ')' => Sep::Close,
                        '|' if self.peek(1) != Some('|') => Sep::Pipe,
                        _ => Sep::Next,
                    };
                    self.i += 1;
                    // `&&`, `||`, `;;`, `|&`.
                    if matches!(sep, Sep::Next | Sep::Pipe)
                        && matches!(self.peek(0), Some('&' | '|' | ';'))
                    {
                        self.i += 1;
                    }
                    self.tokens.push(Token::Sep(sep));
                }
                '<' | '>' if pending.is_none() && !process => {
                    pending = Some(self.redirect_op(None));
                }
                _ => {
                    // A descriptor number before a redirection: `2>`.
                    if c.is_ascii_digit() && pending.is_none() {
                        let mut k = 0;
                        while self.peek(k).is_some_and(|c| c.is_ascii_digit()) {
                            k += 1;
                        }
                        if matches!(self.peek(k), Some('<' | '>')) && self.peek(k + 1) != Some('(')
                        {
                            let fd: String = self.s[self.i..self.i + k].iter().collect();
                            self.i += k;
                            pending = Some(self.redirect_op(fd.parse().ok()));
                            continue;
                        }
                    }
                    let word = self.word()?;
                    match pending.take() {
                        None => self.tokens.push(Token::Word(word)),
                        Some((Redirect::HereDoc, fd, strip)) => {
                            let index = self.tokens.len();
                            let delimiter = word_text(&word);
                            // `<<'EOF'`: the body is literal; `<<EOF`: its
                            // `$…` and `` `…` `` are expanded.
                            let quoted = word
                                .atoms
                                .iter()
                                .any(|a| matches!(a, Atom::Char { quoted: true, .. }));
                            self.heredocs.push((index, delimiter, strip, quoted));
                            self.tokens.push(Token::Redirect(
                                Redirect::HereDoc,
                                fd,
                                RawWord::default(),
                            ));
                        }
                        Some((op @ (Redirect::Write | Redirect::Read), fd, true)) => {
                            // `>&WORD`, `<&WORD`: a descriptor unless a file
                            // name (`>&file` is `&>file`).
                            let descriptor = word
                                .literal()
                                .is_some_and(|t| t == "-" || t.bytes().all(|b| b.is_ascii_digit()));
                            let op = match (descriptor, op) {
                                (true, _) | (false, Redirect::Read) => Redirect::Descriptor,
                                (false, op) => op,
                            };
                            self.tokens.push(Token::Redirect(op, fd, word));
                        }
                        Some((op, fd, _)) => self.tokens.push(Token::Redirect(op, fd, word)),
                    }
                }
            }
        }
        Some(())
    }

    /// Reads a redirection operator at `<` or `>`: its kind, the
    /// descriptor `fd`, and whether it ended in `&` (`>&`, `<&`).
    fn redirect_op(&mut self, fd: Option<u32>) -> (Redirect, Option<u32>, bool) {
        for (op, kind, amp) in [
            ("<<<", Redirect::HereString, false),
            ("<<-", Redirect::HereDoc, true),
            ("<<", Redirect::HereDoc, false),
            ("<>", Redirect::Write, false),
            ("<&", Redirect::Read, true),
            ("<", Redirect::Read, false),
            (">>", Redirect::Write, false),
            (">|", Redirect::Write, false),
            (">&", Redirect::Write, true),
            (">", Redirect::Write, false),
        ] {
            if self.starts(op) {
                self.i += op.chars().count();
                // For a heredoc, the flag is "strip leading tabs" (`<<-`).
                return (kind, fd, amp);
            }
        }
        unreachable!("called at < or >")
    }

    /// After a newline: the bodies of the heredocs opened on the line just
    /// ended, each up to its delimiter line.
    fn read_heredoc_bodies(&mut self) {
        for (index, delimiter, strip, quoted) in std::mem::take(&mut self.heredocs) {
            let mut body = String::new();
            loop {
                let start = self.i;
                while self.peek(0).is_some_and(|c| c != '\n') {
                    self.i += 1;
                }
                let line: String = self.s[start..self.i].iter().collect();
                let at_end = self.peek(0).is_none();
                if self.peek(0) == Some('\n') {
                    self.i += 1;
                }
                let compared = if strip {
                    line.trim_start_matches('\t')
                } else {
                    &line
                };
                if compared == delimiter || at_end && line.is_empty() {
                    break;
                }
                body.push_str(compared);
                body.push('\n');
                if at_end {
                    break;
                }
            }
            let body = if quoted {
                RawWord::quoted(&body)
            } else {
                expanding(&body).unwrap_or_else(|| RawWord::quoted(&body))
            };
            if let Some(Token::Redirect(_, _, word)) = self.tokens.get_mut(index) {
                *word = body;
            }
        }
    }

    /// One word, up to an unquoted blank or operator.
    fn word(&mut self) -> Option<RawWord> {
        let mut w = RawWord::default();
        let at_start = self.i;
        let lit = |w: &mut RawWord, c: char, quoted: bool| w.atoms.push(Atom::Char { c, quoted });
        while let Some(c) = self.peek(0) {
            match c {
                '<' | '>' if self.i == at_start && self.peek(1) == Some('(') => {
                    self.i += 2;
                    let body = self.balanced()?;
                    w.atoms.push(Atom::Process {
                        body,
                        input: c == '<',
                    });
                }
                ' ' | '\t' | '\r' | '\n' | ';' | '&' | '|' | '(' | ')' | '<' | '>' => break,
                '\\' => {
                    match self.peek(1) {
                        Some('\n') | None => {}
                        Some(next) => lit(&mut w, next, true),
                    }
                    self.i += 2;
                }
                '\'' => {
                    self.i += 1;
                    loop {
                        match self.peek(0)? {
                            '\'' => break,
                            c => lit(&mut w, c, true),
                        }
                        self.i += 1;
                    }
                    self.i += 1;
                }
                '"' => {
                    self.i += 1;
                    loop {
                        match self.peek(0)? {
                            '"' => break,
                            '\\' => {
                                match self.peek(1)? {
                                    c @ ('$' | '`' | '"' | '\\') => lit(&mut w, c, true),
                                    '\n' => {}
                                    c => {
                                        lit(&mut w, '\\', true);
                                        lit(&mut w, c, true);
                                    }
                                }
                                self.i += 2;
                            }
                            '$' | '`' => self.expansion(&mut w, true)?,
                            c => {
                                lit(&mut w, c, true);
                                self.i += 1;
                            }
                        }
                    }
                    self.i += 1;
                }
                '$' if self.peek(1) == Some('\'') => {
                    self.i += 2;
                    self.ansi_c(&mut w)?;
                }
                '$' if self.peek(1) == Some('"') => {
                    // `$"…"`: a translated string, read as `"…"`.
                    self.i += 1;
                }
                '$' | '`' => self.expansion(&mut w, false)?,
                '~' if self.i == at_start
                    && matches!(self.peek(1), Some('+' | '-'))
                    && matches!(
                        self.peek(2),
                        None | Some('/' | ' ' | '\t' | '\n' | ';' | '&' | '|' | ')')
                    ) =>
                {
                    // `~+` is $PWD, `~-` $OLDPWD.
                    let which = self.peek(1).map(String::from);
                    self.i += 2;
                    w.atoms.push(Atom::Tilde(which));
                }
                '~' if self.i == at_start => {
                    self.i += 1;
                    let start = self.i;
                    while self
                        .peek(0)
                        .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
                    {
                        self.i += 1;
                    }
                    let user: String = self.s[start..self.i].iter().collect();
                    if matches!(self.peek(0), None | Some('/' | ':'))
                        || self.peek(0).is_some_and(|c| " \t\r\n;&|()<>".contains(c))
                    {
                        w.atoms
                            .push(Atom::Tilde((!user.is_empty()).then_some(user)));
                    } else {
                        // `~x'…'`: not a tilde prefix after all.
                        lit(&mut w, '~', false);
                        for c in user.chars() {
                            lit(&mut w, c, false);
                        }
                    }
                }
                c => {
                    lit(&mut w, c, false);
                    self.i += 1;
                }
            }
        }
        Some(w)
    }

    /// The body of `$'…'` (the cursor after the opening quote), its escapes
    /// decoded.
    fn ansi_c(&mut self, w: &mut RawWord) -> Option<()> {
        loop {
            let c = match self.peek(0)? {
                '\'' => break,
                '\\' => {
                    let e = self.peek(1)?;
                    self.i += 2;
                    match e {
                        'n' => '\n',
                        't' => '\t',
                        'r' => '\r',
                        'a' => '\x07',
                        'b' => '\x08',
                        'e' | 'E' => '\x1b',
                        'f' => '\x0c',
                        'v' => '\x0b',
                        'x' | 'u' | 'U' => {
                            let most = match e {
                                'x' => 2,
                                'u' => 4,
                                _ => 8,
                            };
                            let digits = self.take_while_max(most, |c| c.is_ascii_hexdigit());
                            match u32::from_str_radix(&digits, 16)
                                .ok()
                                .and_then(char::from_u32)
                            {
                                Some(c) => c,
                                None => {
                                    // `\x` without digits stays as written.
                                    w.atoms.push(Atom::Char {
                                        c: '\\',
                                        quoted: true,
                                    });
                                    e
                                }
                            }
                        }
                        '0'..='7' => {
                            self.i -= 1;
                            let digits = self.take_while_max(3, |c| ('0'..='7').contains(&c));
                            char::from_u32(u32::from_str_radix(&digits, 8).unwrap_or(0) & 0xff)
                                .unwrap_or('\0')
                        }
                        'c' => {
                            // `\cX`: a control character.
                            let x = self.peek(0)?;
                            self.i += 1;
                            char::from_u32(u32::from(x) & 0x1f).unwrap_or('\0')
                        }
                        other => other,
                    }
                }
                c => {
                    self.i += 1;
                    c
                }
            };
            w.atoms.push(Atom::Char { c, quoted: true });
        }
        self.i += 1;
        Some(())
    }

    fn take_while_max(&mut self, most: usize, ok: impl Fn(char) -> bool) -> String {
        let start = self.i;
        while self.i - start < most && self.peek(0).is_some_and(&ok) {
            self.i += 1;
        }
        self.s[start..self.i].iter().collect()
    }

    /// After an opening `(`: the text up to its matching `)` (quotes and
    /// nested parentheses skipped), the cursor after it.
    fn balanced(&mut self) -> Option<String> {
        let start = self.i;
        let mut depth = 1;
        while depth > 0 {
            match self.peek(0)? {
                '(' => depth += 1,
                ')' => depth -= 1,
                '\'' => {
                    self.i += 1;
                    while self.peek(0)? != '\'' {
                        self.i += 1;
                    }
                }
                '"' => {
                    self.i += 1;
                    while self.peek(0)? != '"' {
                        if self.peek(0) == Some('\\') {
                            self.i += 1;
                        }
                        self.i += 1;
                    }
                }
                '\\' => self.i += 1,
                _ => {}
            }
            self.i += 1;
        }
        Some(self.s[start..self.i - 1].iter().collect())
    }

    /// `$NAME`, `${…}`, `$(…)`, `$((…))` or `` `…` `` at the cursor.
    fn expansion(&mut self, w: &mut RawWord, quoted: bool) -> Option<()> {
        if self.peek(0) == Some('`') {
            self.i += 1;
            let mut body = String::new();
            loop {
                match self.peek(0)? {
                    '`' => break,
                    // Inside backticks `\$`, `` \` `` and `\\` lose the
                    // backslash.
                    '\\' if matches!(self.peek(1), Some('$' | '`' | '\\')) => {
                        body.push(self.peek(1)?);
                        self.i += 2;
                    }
                    c => {
                        body.push(c);
                        self.i += 1;
                    }
                }
            }
            self.i += 1;
            w.atoms.push(Atom::Command { body, quoted });
            return Some(());
        }
        // At `$`.
        match self.peek(1) {
            Some('(') => {
                let arithmetic = self.peek(2) == Some('(');
                self.i += 2;
                let body = self.balanced()?;
                w.atoms.push(if arithmetic {
                    Atom::Arithmetic
                } else {
                    Atom::Command { body, quoted }
                });
            }
            Some('{') => {
                self.i += 2;
                let start = self.i;
                let mut depth = 1;
                while depth > 0 {
                    match self.peek(0)? {
                        '{' => depth += 1,
                        '}' => depth -= 1,
                        '\\' => self.i += 1,
                        _ => {}
                    }
                    self.i += 1;
                }
                let inner: String = self.s[start..self.i - 1].iter().collect();
                w.atoms.push(param(&inner, quoted));
            }
            Some(c) if c == '_' || c.is_ascii_alphabetic() => {
                self.i += 1;
                let start = self.i;
                while self
                    .peek(0)
                    .is_some_and(|c| c == '_' || c.is_ascii_alphanumeric())
                {
                    self.i += 1;
                }
                let name: String = self.s[start..self.i].iter().collect();
                w.atoms.push(Atom::Param {
                    name,
                    quoted,
                    default: None,
                    odd: false,
                });
            }
            Some(c) if c.is_ascii_digit() || "@*#?$!-".contains(c) => {
                self.i += 2;
                w.atoms.push(Atom::Param {
                    name: c.to_string(),
                    quoted,
                    default: None,
                    odd: false,
                });
            }
            _ => {
                // A lone `$`.
                w.atoms.push(Atom::Char { c: '$', quoted });
                self.i += 1;
            }
        }
        Some(())
    }
}

/// The body of an unquoted heredoc as a word: text as in double quotes
/// (`$…`, `` `…` ``, `\$`, `` \` ``, `\\` and `\`-newline special), but a
/// `"` is just a character.
fn expanding(body: &str) -> Option<RawWord> {
    let chars: Vec<char> = body.chars().collect();
    let mut lexer = Lexer {
        s: &chars,
        i: 0,
        tokens: Vec::new(),
        heredocs: Vec::new(),
    };
    let mut w = RawWord::default();
    while let Some(c) = lexer.peek(0) {
        match c {
            '\\' => {
                match lexer.peek(1) {
                    Some(c @ ('$' | '`' | '\\')) => w.atoms.push(Atom::Char { c, quoted: true }),
                    Some('\n') => {}
                    other => {
                        w.atoms.push(Atom::Char {
                            c: '\\',
                            quoted: true,
                        });
                        if let Some(c) = other {
                            w.atoms.push(Atom::Char { c, quoted: true });
                        }
                    }
                }
                lexer.i += 2;
            }
            '$' | '`' => lexer.expansion(&mut w, true)?,
            c => {
                w.atoms.push(Atom::Char { c, quoted: true });
                lexer.i += 1;
            }
        }
    }
    Some(w)
}

/// `${inner}` as an atom.
fn param(inner: &str, quoted: bool) -> Atom {
    let end = inner
        .find(|c: char| !(c == '_' || c.is_ascii_alphanumeric()))
        .unwrap_or(inner.len());
    let (name, rest) = inner.split_at(end);
    let default = [(":-", true), ("-", false), (":=", true), ("=", false)]
        .into_iter()
        .find_map(|(op, colon)| {
            rest.strip_prefix(op).map(|word| Default {
                colon,
                word: word.to_string(),
            })
        });
    let odd = name.is_empty() || (!rest.is_empty() && default.is_none());
    Atom::Param {
        name: name.to_string(),
        quoted,
        default,
        odd,
    }
}

/// A heredoc delimiter's text (its quotes removed).
fn word_text(w: &RawWord) -> String {
    w.atoms
        .iter()
        .map(|a| match a {
            Atom::Char { c, .. } => c.to_string(),
            Atom::Param { name, .. } => format!("${name}"),
            _ => String::new(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(script: &str) -> Vec<String> {
        lex(script)
            .unwrap()
            .into_iter()
            .filter_map(|t| match t {
                Token::Word(w) => w.literal(),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn quoting_is_removed_and_remembered() {
        assert_eq!(
            words(r#"a'b c'"d\"e" f\ g $'h\x69\n' x~"#),
            ["ab cd\"e", "f g", "hi\n", "x~"]
        );
        let Some(Token::Word(w)) = lex("'*'*").unwrap().into_iter().next() else {
            panic!()
        };
        assert_eq!(
            w.atoms,
            [
                Atom::Char {
                    c: '*',
                    quoted: true
                },
                Atom::Char {
                    c: '*',
                    quoted: false
                }
            ]
        );
    }

    #[test]
    fn separators_redirections_and_substitutions() {
        let tokens = lex("a 2>x | b >&2 && c <(d) $(e f) ${g:-h}").unwrap();
        assert!(matches!(
            tokens[1],
            Token::Redirect(Redirect::Write, Some(2), _)
        ));
        assert_eq!(tokens[2], Token::Sep(Sep::Pipe));
        assert!(matches!(
            tokens[4],
            Token::Redirect(Redirect::Descriptor, None, _)
        ));
        assert_eq!(tokens[5], Token::Sep(Sep::Next));
        let Token::Word(ref p) = tokens[7] else {
            panic!("{tokens:?}")
        };
        assert_eq!(
            p.atoms,
            [Atom::Process {
                body: "d".into(),
                input: true
            }]
        );
        let Token::Word(ref s) = tokens[8] else {
            panic!()
        };
        assert_eq!(
            s.atoms,
            [Atom::Command {
                body: "e f".into(),
                quoted: false
            }]
        );
        let Token::Word(ref g) = tokens[9] else {
            panic!()
        };
        assert!(matches!(
            &g.atoms[0],
            Atom::Param { name, default: Some(Default { colon: true, word }), .. }
                if name == "g" && word == "h"
        ));
        assert_eq!(lex("echo 'open"), None);
        assert_eq!(lex("echo $(open"), None);
    }
}
