"""ask_mail keeps no rows of its own: a question leaves no trace in the database."""
