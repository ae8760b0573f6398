//! `cardinal completions SHELL` and `cardinal man [SUBCOMMAND]`: generated from the clap
//! definition, so they cannot fall behind the flags.

use anyhow::Context;
use clap::CommandFactory;

/// Arguments of `cardinal completions`.
#[derive(Debug, clap::Args)]
pub(crate) struct CompletionsArgs {
    /// The shell to complete in.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// Arguments of `cardinal man`.
#[derive(Debug, clap::Args)]
pub(crate) struct ManArgs {
    /// A subcommand whose page to print (`cardinal-train(1)`, ...); default the top-level page,
    /// which lists the subcommands.
    pub subcommand: Option<String>,
}

/// Prints the completion script of `C` for the shell asked for.
pub(crate) fn completions<C: CommandFactory>(args: &CompletionsArgs) -> anyhow::Result<()> {
    let mut buf = Vec::new();
    clap_complete::generate(args.shell, &mut C::command(), "cardinal", &mut buf);
    crate::output::bytes(&buf);
    Ok(())
}

/// Prints the manual page (roff) of `C` or of one of its subcommands.
pub(crate) fn man<C: CommandFactory>(args: &ManArgs) -> anyhow::Result<()> {
    let mut cmd = C::command();
    cmd.build();
    let page = match &args.subcommand {
        None => cmd,
        Some(name) => {
            let sub = cmd.find_subcommand(name).cloned().with_context(|| {
                let names: Vec<&str> = cmd.get_subcommands().map(|s| s.get_name()).collect();
                format!("no subcommand `{name}` (one of: {})", names.join(", "))
            })?;
            let full = format!("cardinal-{}", sub.get_name());
            sub.name(full)
        }
    };
    let mut buf = Vec::new();
    clap_mangen::Man::new(page).render(&mut buf)?;
    crate::output::bytes(&buf);
    Ok(())
}
