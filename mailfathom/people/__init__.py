"""Search and ask for people in the browser, over the accounts they may read.

The pages read through the MCP tools' own use cases (search_emails, ask_mail, list_accounts)
inside `limited_to_accounts(readable_accounts(user))`, so a person's scope, bounds and
refusals are the tools' own.
"""
