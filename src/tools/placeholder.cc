namespace ferry {}
